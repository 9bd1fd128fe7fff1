"""Benchmark: SI-SNR and SNR improvement on the demo test split, per noise kind, of
the project's denoiser (the model the demo pipeline pushed, through its `serve_wav`
signature) against off-the-shelf denoisers: spectral gating (noisereduce) and
RNNoise (pyrnnoise).

    .venv/bin/python -m benchmarks.denoise_baselines [--data data/demo] \
        [--model outputs/demo/serving] [--out benchmarks/RESULTS-denoise_baselines.md]

`--model` is a pushed SavedModel directory or the Pusher's base directory (the newest
version is taken); without it only the baselines run. Every method is scored on the
same samples: the model's window (the length of its `enhanced_wav`; without a model,
the demo config's `features.clip_seconds`).

The test split is the one the pipeline makes: TFX's own hash partition of `group`
with the demo config's buckets. `bash scripts/demo.sh` now writes the broad data
(`pipeline.datagen.keywords --variety broad`: more voices and noise kinds); the recorded
results were measured on the classic data (`--variety classic`), before that change. RNNoise runs at
48 kHz (soxr resampling) and its output is delayed by 20 ms; the benchmark removes that delay, and reports the lag
cross-correlation finds, as a check.
"""
import argparse
import collections
import csv
import io
import os

import noisereduce
import numpy as np
import soundfile
import soxr
import tensorflow as tf
from pyrnnoise import RNNoise
from tfx import v1 as tfx
from tfx.components.example_gen.base_example_gen_executor import _PartitionFn

import pipeline  # noqa: F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from benchmarks.report import publish
from components import features
from components.audio import wav_io
from components.audio.snr import improvement_db, si_snr_db, snr_db
from components.config import load_config

RNNOISE_RATE = 48000
RNNOISE_DELAY_S = 0.020


def test_split_rows(data_dir, config_path="pipeline/configs/demo.yaml"):
    """metadata.csv rows of noisy clips whose group the pipeline puts in `test`."""
    buckets = load_config(config_path).data.split_buckets
    names, edges, total = list(buckets), [], 0
    for name in names:
        total += buckets[name]
        edges.append(total)
    split_config = tfx.proto.SplitConfig(partition_feature_name=features.GROUP)
    with open(os.path.join(data_dir, "metadata.csv")) as f:
        rows = [r for r in csv.DictReader(f) if r["clean_file_name"]]
    out = []
    for row in rows:
        example = tf.train.Example()
        example.features.feature[features.GROUP].bytes_list.value.append(row["group"].encode())
        if names[_PartitionFn(example, len(edges), edges, split_config)] == "test":
            out.append(row)
    return out


def rnnoise(noisy: np.ndarray, sr: int) -> np.ndarray:
    """RNNoise at 48 kHz, back to `sr`, with its 20 ms delay removed."""
    up = soxr.resample(noisy, sr, RNNOISE_RATE)
    pcm = np.clip(up * 32767, -32768, 32767).astype(np.int16)
    frames = [frame for _, frame in RNNoise(RNNOISE_RATE).denoise_chunk(pcm, partial=True)]
    out = np.concatenate([np.atleast_2d(f)[0] for f in frames]).astype(np.float32) / 32767
    down = soxr.resample(out, RNNOISE_RATE, sr)
    delay = int(round(RNNOISE_DELAY_S * sr))
    aligned = down[delay:delay + len(noisy)]
    return np.pad(aligned, (0, len(noisy) - len(aligned)))


def _lag(reference: np.ndarray, estimate: np.ndarray, sr: int) -> float:
    corr = np.correlate(estimate, reference, mode="full")
    return (np.argmax(corr) - (len(reference) - 1)) / sr


METHODS = {
    "noisereduce (spectral gating)": lambda noisy, sr: noisereduce.reduce_noise(y=noisy, sr=sr),
    "RNNoise": rnnoise,
}
PROJECT = "tfx-audio denoiser"


def pushed_model(model_dir: str) -> str:
    """A SavedModel directory: `model_dir` itself, or the newest version the Pusher wrote in it."""
    if tf.io.gfile.exists(os.path.join(model_dir, "saved_model.pb")):
        return model_dir
    versions = sorted(tf.io.gfile.listdir(model_dir), key=lambda v: int(v.strip("/")))
    return os.path.join(model_dir, versions[-1].strip("/"))


def project_denoiser(model_dir: str):
    """A method running the exported model's serve_wav and decoding its enhanced WAV."""
    model_dir = pushed_model(model_dir)
    serve = tf.saved_model.load(model_dir).signatures["serve_wav"]

    def enhance(noisy: np.ndarray, sr: int) -> np.ndarray:
        out = serve(wav=tf.constant([wav_io.encode_pcm16_wav(noisy)]))
        if features.OUT_ENHANCED_WAV not in out:
            raise ValueError(f"{model_dir} has no {features.OUT_ENHANCED_WAV} output: trained without the denoiser")
        enhanced, rate = soundfile.read(io.BytesIO(out[features.OUT_ENHANCED_WAV].numpy()[0]), dtype="float32")
        assert rate == sr == features.SAMPLE_RATE
        return enhanced

    return model_dir, enhance


def with_project(model, loader, how: str = ""):
    """(the methods to compare, a note naming the model): the baselines, plus the project's
    denoiser from `loader(model)` when a model is given."""
    methods = dict(METHODS)
    if not model:
        return methods, ""
    model_dir, methods[PROJECT] = loader(model)
    return methods, f" {PROJECT}: {model_dir}{how}."


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="data/demo")
    parser.add_argument("--model", default=None, help="pushed model (or Pusher base directory)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    methods, model_note = with_project(args.model, project_denoiser)
    window = load_config("pipeline/configs/demo.yaml").features.num_samples
    rows = test_split_rows(args.data)
    scores = collections.defaultdict(lambda: collections.defaultdict(list))
    excluded = collections.Counter()
    lags = []
    for row in rows:
        noisy, sr = soundfile.read(os.path.join(args.data, row["file_name"]), dtype="float32")
        clean, _ = soundfile.read(os.path.join(args.data, row["clean_file_name"]), dtype="float32")
        outputs = {method: fn(noisy, sr).astype(np.float32) for method, fn in methods.items()}
        # The model's own output length is its window; every method is scored on it.
        n = len(outputs[PROJECT]) if PROJECT in outputs else window
        scored_noisy, scored_clean = noisy[:n], clean[:n]
        for method, enhanced in outputs.items():
            enhanced = enhanced[:n]
            for metric_name, metric in (("SI-SNRi", si_snr_db), ("SNRi", snr_db)):
                value = improvement_db(metric, scored_clean, scored_noisy, enhanced)
                if value is None:
                    excluded[(method, metric_name)] += 1
                else:
                    scores[(method, metric_name)][row["noise_kind"]].append(value)
        if len(lags) < 20:
            up = soxr.resample(noisy, sr, RNNOISE_RATE)
            raw = np.concatenate([np.atleast_2d(f)[0] for _, f in RNNoise(RNNOISE_RATE).denoise_chunk(
                np.clip(up * 32767, -32768, 32767).astype(np.int16), partial=True)]).astype(np.float32)
            lags.append(_lag(up[:len(raw)], raw[:len(up)], RNNOISE_RATE))
    kinds = sorted({r["noise_kind"] for r in rows})
    per_kind = ", ".join(f"{k}: {sum(r['noise_kind'] == k for r in rows)}" for k in kinds)
    lines = [f"Demo test split: {len(rows)} noisy clips ({per_kind}), input SNR 0-20 dB, scored on the "
             f"model's window (at most {window} samples). Mean improvement in dB (enhanced vs noisy, against the clean "
             f"reference).{model_note}",
             f"RNNoise lag found by cross-correlation (median of {len(lags)} clips): "
             f"{np.median(lags) * 1000:.1f} ms.", "",
             "| method | metric | " + " | ".join(kinds) + " | all |",
             "| --- | --- | " + " | ".join("---" for _ in kinds) + " | --- |"]
    for (method, metric_name), by_kind in sorted(scores.items()):
        every = [v for vs in by_kind.values() for v in vs]
        lines.append(f"| {method} | {metric_name} | " + " | ".join(f"{np.mean(by_kind[k]):.2f}" for k in kinds)
                     + f" | {np.mean(every):.2f} |")
    if excluded:
        lines.append("\nExcluded as undefined: " + ", ".join(f"{m} {n}: {c}" for (m, n), c in excluded.items()))
    table = "\n".join(lines)
    publish("Denoising baselines", table, args.out)


if __name__ == "__main__":
    main()
