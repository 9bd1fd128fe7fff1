"""Benchmark: the compiled training step versus the same step run eagerly, for both
backbones, side by side in one process (rounds interleaved so machine noise hits
both alike). Also counts traces of the compiled step over the whole run.

    .venv/bin/python -m benchmarks.train_step [--rounds 3] [--steps 5] [--out benchmarks/RESULTS-train_step.md]

Random weights and inputs: speed does not depend on what the model knows.
"""
import argparse
import os
import platform
import time

import numpy as np
import tensorflow as tf

import pipeline  # noqa: F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from benchmarks.report import publish
from components import features
from components.config import FeatureConfig, TrainerConfig, Wav2Vec2Config
from components.models.model import build_model, input_keys
from components.training import loop

TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            conv_dim=(32, 32, 32), conv_kernel=(8, 3, 3), conv_stride=(4, 2, 2),
            num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2)
CASES = {  # name: (trainer config, batch size)
    "logmel_cnn": (TrainerConfig(backbone="logmel_cnn", grad_accum_steps=1), 32),
    "wav2vec2 tiny": (TrainerConfig(backbone="wav2vec2", grad_accum_steps=1,
                                    wav2vec2=Wav2Vec2Config(config_overrides=TINY)), 8),
    # wav2vec2-base's shape (Wav2Vec2Config defaults: 12 layers, hidden 768), random weights.
    "wav2vec2 base": (TrainerConfig(backbone="wav2vec2", grad_accum_steps=1,
                                    wav2vec2=Wav2Vec2Config(freeze_feature_encoder=True)), 4),
}


def _batch(batch_size, feats: FeatureConfig, rng):
    x = {features.LOG_MEL: rng.standard_normal((batch_size, feats.num_frames, feats.num_mel_bins)),
         features.WAVEFORM: rng.standard_normal((batch_size, feats.num_samples)),
         features.NUM_SAMPLES: np.full([batch_size], feats.num_samples)}
    x = {k: tf.constant(v, tf.int64 if k == features.NUM_SAMPLES else tf.float32) for k, v in x.items()}
    return x, tf.constant(rng.integers(0, 10, batch_size), tf.int64)


def _step_fn(cfg, feats, batch):
    model = build_model(cfg, feats, 10)
    optimizer = loop.build_optimizer(cfg, total_steps=1000)
    optimizer.build(model.trainable_variables)
    keys = set(input_keys(cfg))
    x = {k: v for k, v in batch[0].items() if k in keys}
    spec = ({k: tf.TensorSpec([None, *v.shape[1:]], v.dtype) for k, v in x.items()}, tf.TensorSpec([None], tf.int64))
    step = loop.make_train_step(model, optimizer, tf.distribute.get_strategy(), spec,
                                         cfg.batch_size, 1)
    params = sum(int(np.prod(v.shape)) for v in model.trainable_variables)
    return step, (x, batch[1]), params


def _time(step, batch, steps, eager):
    tf.config.run_functions_eagerly(eager)
    try:
        step(batch)  # warm-up (and, compiled, the one trace)
        start = time.perf_counter()
        for _ in range(steps):
            out = step(batch)
        float(out["loss"])
        return steps * int(batch[1].shape[0]) / (time.perf_counter() - start)
    finally:
        tf.config.run_functions_eagerly(False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    feats, rng = FeatureConfig(), np.random.default_rng(0)
    rows = []
    for name in args.cases:
        cfg, batch_size = CASES[name]
        cfg.batch_size = batch_size
        batch = _batch(batch_size, feats, rng)
        compiled, data, params = _step_fn(cfg, feats, batch)
        eager, _, _ = _step_fn(cfg, feats, batch)
        speeds = {"compiled": [], "eager": []}
        for _ in range(args.rounds):  # interleaved
            speeds["compiled"].append(_time(compiled, data, args.steps, eager=False))
            speeds["eager"].append(_time(eager, data, args.steps, eager=True))
        c, e = np.median(speeds["compiled"]), np.median(speeds["eager"])
        rows.append(f"| {name} | {params:,} | {batch_size} | {c:.1f} | {e:.1f} | {c / e:.2f}x | "
                    f"{compiled.experimental_get_tracing_count()} |")
        print(rows[-1], flush=True)
    table = "\n".join([
        f"Machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, TF {tf.__version__}, float32.",
        f"Median of {args.rounds} interleaved rounds of {args.steps} steps, after one warm-up step each.", "",
        "| backbone | trainable params | batch | compiled ex/s | eager ex/s | compiled/eager "
        "| traces (compiled, whole run) |",
        "| --- | --- | --- | --- | --- | --- | --- |", *rows])
    publish("Training step: compiled vs eager", table, args.out)


if __name__ == "__main__":
    main()
