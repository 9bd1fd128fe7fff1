"""`tfx-audio predict`: audio files or folders through a pushed model.

Writes, under --out:
- predictions.csv: one row a file: its label (the mean of its windows' probabilities) and
  a probability per class;
- windows.csv: one row a window of a file: start, end, label, probabilities;
- enhanced/<file>.wav: the denoised audio (16 kHz mono), when the model denoises;
- rejects.csv: every file that could not be read, with the reason.
Every input file ends up in predictions.csv or rejects.csv. Memory stays that of one window
(and one denoiser chunk), whatever the recordings' lengths (components/serving/recording.py).
"""
from __future__ import annotations

import csv
import dataclasses
import os
from typing import Iterable, List, Tuple

import tqdm

from components.serving.recording import RecordingModel

AUDIO_SUFFIXES = (".wav", ".flac", ".ogg")


@dataclasses.dataclass
class Outcome:
    predicted: int
    rejected: int
    out_dir: str


def latest_pushed(serving_dir: str) -> str:
    """The newest model the Pusher wrote under serving_dir (its versions are timestamps)."""
    versions = sorted((name for name in os.listdir(serving_dir) if name.isdigit()), key=int) \
        if os.path.isdir(serving_dir) else []
    if not versions:
        raise FileNotFoundError(f"no pushed model under {serving_dir}: run the pipeline until it pushes, "
                                f"or pass --model DIR")
    return os.path.join(serving_dir, versions[-1])


def input_files(paths: Iterable[str]) -> List[Tuple[str, str]]:
    """(path, name under --out) for every file given and every audio file under each folder given."""
    found = []
    for path in paths:
        if os.path.isdir(path):
            for root, _, names in sorted(os.walk(path)):
                for name in sorted(names):
                    if name.lower().endswith(AUDIO_SUFFIXES):
                        full = os.path.join(root, name)
                        found.append((full, os.path.relpath(full, path)))
        else:
            found.append((path, os.path.basename(path)))  # a missing file is rejected, with its reason
    return found


def predict(model_dir: str, inputs: Iterable[str], out_dir: str, hop_s: float = None,
            progress: bool = True) -> Outcome:
    model = RecordingModel(model_dir)
    files = input_files(inputs)
    os.makedirs(out_dir, exist_ok=True)
    labels = list(model.labels)
    predicted = rejected = 0
    with open(os.path.join(out_dir, "predictions.csv"), "w", newline="") as p, \
            open(os.path.join(out_dir, "windows.csv"), "w", newline="") as w, \
            open(os.path.join(out_dir, "rejects.csv"), "w", newline="") as r:
        per_file = csv.DictWriter(p, ["file", "duration_s", "windows", "label", *labels])
        per_window = csv.DictWriter(w, ["file", "start_s", "end_s", "label", *labels])
        rejects = csv.writer(r)
        for writer in (per_file, per_window):
            writer.writeheader()
        rejects.writerow(["file", "reason"])
        bar = tqdm.tqdm(files, unit="file", disable=not progress, desc="predict")
        for path, name in bar:
            try:
                result = model.classify(path, hop_s=hop_s)
                if model.denoises:
                    enhanced = os.path.join(out_dir, "enhanced", os.path.splitext(name)[0] + ".wav")
                    os.makedirs(os.path.dirname(enhanced), exist_ok=True)
                    model.denoise(path, enhanced)
            except Exception as e:  # one bad file is listed with its reason; the rest go on
                rejects.writerow([path, f"{type(e).__name__}: {e}"])
                rejected += 1
                continue
            per_file.writerow({"file": path, "duration_s": round(result.duration_s, 3),
                               "windows": len(result.starts_s), "label": result.label,
                               **dict(zip(labels, map(float, result.mean_probabilities)))})
            for row in result.rows():
                per_window.writerow({"file": path, **row})
            predicted += 1
            bar.set_postfix(rejected=rejected)
    return Outcome(predicted, rejected, out_dir)
