"""Benchmark: does the keyword label depend on where the word sits in the window?

    .venv/bin/python -m benchmarks.keyword_offsets --model outputs/demo/serving \
        [--model NAME=DIR ...] [--heldout data/demo_heldout/validation] [--out benchmarks/RESULTS-keyword_offsets.md]

Recorded keywords rarely start at the window's first sample: Speech Commands' clips hold each
word somewhere in one second. Every clip of the held-out corpus (pipeline/datagen/heldout.py:
voices, noises and a channel the training never has) is put into a 1-s window at 0, 0.1 and
0.3 s after its start (silence before, the clip cut at the window's end), and the pushed model's
`serve_wav` labels each. Per offset: accuracy, clean and noisy apart, and how often the label is
the one the same clip gets at offset 0. By default the held-out protocol's tuning (validation) part
(docs/generalization.md); `--heldout data/demo_heldout/test` reads its test part, once per model.
"""
import argparse
import csv
import os
from typing import Dict, List

import numpy as np
import tensorflow as tf

import pipeline  # noqa: F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from benchmarks.report import publish
from components import features
from components.audio import wav_io
from pipeline.predict import latest_pushed

OFFSETS_S = (0.0, 0.1, 0.3)


def placed(clip: np.ndarray, offset_s: float, window_s: float = 1.0) -> np.ndarray:
    """`clip` in a window of `window_s` seconds, starting `offset_s` in (zeros before, cut at the end)."""
    window = np.zeros(int(window_s * features.SAMPLE_RATE), np.float32)
    start = int(offset_s * features.SAMPLE_RATE)
    part = clip[:len(window) - start]
    window[start:start + len(part)] = part
    return window


def labels(model_dir: str, clips: List[np.ndarray], offset_s: float, batch: int = 32) -> List[str]:
    serve = tf.saved_model.load(model_dir).signatures["serve_wav"]
    out = []
    for i in range(0, len(clips), batch):
        wavs = [wav_io.encode_pcm16_wav(placed(c, offset_s)) for c in clips[i:i + batch]]
        out += [label.decode() for label in serve(wav=tf.constant(wavs))[features.OUT_LABEL].numpy()]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", action="append", required=True,
                        help="NAME=DIR or DIR: a pushed model, or a serving dir (its newest push); repeatable")
    parser.add_argument("--heldout", default="data/demo_heldout/validation",
                        help="the held-out corpus part (metadata.csv); its test part is read once per configuration")
    parser.add_argument("--out", help="the results file to write")
    args = parser.parse_args()
    with open(os.path.join(args.heldout, "metadata.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    clips = []
    for row in rows:
        with open(os.path.join(args.heldout, row["file_name"]), "rb") as f:
            clips.append(wav_io.decode_to_mono_16k(f.read()))
    truth = np.array([row["label"] for row in rows])
    noisy = np.array([bool(row["snr_db"]) for row in rows])
    table = ["| model | offset (s) | accuracy, all | clean | noisy | same label as at 0 s |",
             "| --- | --- | --- | --- | --- | --- |"]
    for spec in args.model:
        name, _, model_dir = spec.rpartition("=")
        model_dir = model_dir if os.path.exists(os.path.join(model_dir, "saved_model.pb")) else latest_pushed(model_dir)
        name = name or model_dir
        predicted: Dict[float, np.ndarray] = {o: np.array(labels(model_dir, clips, o)) for o in OFFSETS_S}
        for offset, got in predicted.items():
            right = got == truth
            table.append(f"| {name} | {offset:g} | {right.mean():.3f} | {right[~noisy].mean():.3f} | "
                         f"{right[noisy].mean():.3f} | {(got == predicted[0.0]).mean():.3f} |")
    head = (f"{len(rows)} held-out clips ({int((~noisy).sum())} clean, {int(noisy.sum())} noisy at 0, 5 and 10 dB; "
            f"wideband and mobile) from {args.heldout}, each in a 1-s window at each offset, labelled by "
            f"`serve_wav`. " + ("The held-out protocol's test part, read once for these models."
                                if os.path.basename(os.path.normpath(args.heldout)) == "test" else
                                "Validation material: the held-out protocol's tuning corpus.") + "\n\n")
    publish("Keyword labels against the word's place in the window", head + "\n".join(table) + "\n", args.out)


if __name__ == "__main__":
    main()
