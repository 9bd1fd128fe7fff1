"""Benchmark: the denoiser's size and real-time factor on one CPU core: the demo config's
design (DTLN) and the conv + BiGRU design with each mask kind, and, with --model, the pushed
model's whole-recording `denoise_wav` signature.

    .venv/bin/python -m benchmarks.denoiser_speed [--seconds 60] [--rounds 3] \
        [--model outputs/demo/serving] [--out benchmarks/RESULTS-denoiser_speed.md]

The process is pinned to one core (sched_setaffinity) and TensorFlow to one thread per
pool, so the figures are one core's. Real-time factor = processing time / audio time
(under 1: faster than real time; the issue's bound is 0.1). Each case is compiled and
warmed up first; the rounds are interleaved so machine noise hits the cases alike, and
the median is reported. Random weights: speed does not depend on what the model knows.
"""
import argparse
import dataclasses
import os
import platform
import time

os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core, before TF starts its pools

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import pipeline  # noqa: F401,E402  (TF_USE_LEGACY_KERAS before TensorFlow)
from benchmarks.denoise_baselines import pushed_model  # noqa: E402
from benchmarks.report import publish  # noqa: E402
from components import features  # noqa: E402
from components.audio import wav_io  # noqa: E402
from components.config import load_config  # noqa: E402
from components.models.denoiser import build_denoiser  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)


def _denoiser_case(seconds: float, **changes):
    """(callable, parameters) for the demo config's denoiser with `changes`, on one waveform."""
    cfg = dataclasses.replace(load_config("pipeline/configs/demo.yaml").trainer.denoiser, **changes)
    denoiser = build_denoiser(cfg)
    audio = tf.random.normal([1, int(seconds * features.SAMPLE_RATE)], seed=0)
    run = tf.function(lambda x: denoiser(x))
    run(audio)
    return (lambda: run(audio).numpy()), denoiser.count_params()


def _signature_case(model: str, seconds: float):
    signature = tf.saved_model.load(pushed_model(model)).signatures["denoise_wav"]
    rng = np.random.default_rng(0)
    wav = tf.constant(wav_io.encode_pcm16_wav(0.1 * rng.standard_normal(int(seconds * features.SAMPLE_RATE))))
    signature(wav=wav)
    return (lambda: signature(wav=wav)[features.OUT_ENHANCED_WAV].numpy()), None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="audio per call")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", default=None, help="pushed model (or Pusher base directory)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    cases = {"denoiser, DTLN (demo config)": _denoiser_case(args.seconds)}
    cases.update({f"denoiser, conv + BiGRU, {mask} mask": _denoiser_case(args.seconds, design="conv_bigru", mask=mask)
                  for mask in ("magnitude", "complex")})
    if args.model:
        cases[f"denoise_wav of {pushed_model(args.model)}"] = _signature_case(args.model, args.seconds)
    times = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, (run, _) in cases.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    rows = ["| case | parameters | seconds per call (median) | real-time factor |", "| --- | --- | --- | --- |"]
    for name, (_, params) in cases.items():
        median = float(np.median(times[name]))
        rows.append(f"| {name} | {params if params is not None else 'n/a'} | {median:.3f} | "
                    f"{median / args.seconds:.4f} |")
    table = (f"{args.seconds:g} s of 16 kHz audio per call, {args.rounds} rounds, one core of "
             f"{platform.processor() or platform.machine()} ({os.cpu_count()} on the machine), TensorFlow "
             f"{tf.__version__} with one thread per pool.\n\n" + "\n".join(rows))
    publish("Denoiser size and real-time factor on one core", table, args.out)


if __name__ == "__main__":
    main()
