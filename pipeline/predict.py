"""`tfx-audio predict`: audio files or folders through a pushed model.

Writes, under --out:
- predictions.csv: one row a file: its label (the mean of its windows' probabilities) and
  a probability per class;
- windows.csv: one row a window of a file: start, end, label, probabilities;
- enhanced/<file>.wav: the denoised audio (16 kHz mono), when the model denoises;
- rejects.csv: every file that could not be read, with the reason in plain words.
Every input file ends up in predictions.csv or rejects.csv, each row flushed as soon as its
file is done (a run stopped halfway keeps the rows before). An entry that is not a regular
file (a FIFO, a socket, a dangling link) is rejected without being opened: a FIFO opened for
reading waits for a writer. A name that is not UTF-8 is rejected, shown escaped (`\\xe9`).
A recording shorter than data.min_segment_s, the ExampleGen's shortest window, is refused.
Memory stays that of one window (and one denoiser chunk), whatever the recordings' lengths
(components/serving/recording.py).
"""
from __future__ import annotations

import csv
import dataclasses
import errno
import os
from typing import Iterable, List, Optional, Tuple

import tqdm

from components.audio.wav_io import AudioError
from components.config import DataConfig
from components.ingest import listing
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


def plain_reason(error: OSError) -> str:
    """An OS error in plain words, without its errno or the path (the row names the file)."""
    if error.errno == errno.ENOENT:
        return "does not exist"
    if error.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return f"cannot be read: {(error.strerror or type(error).__name__).lower()}"


def refused(path: str) -> Optional[str]:
    """Why `path` is not read, before anything opens it; None for a readable regular file
    (or a link to one). Never opens anything else: a FIFO would block the run."""
    if listing.not_utf8(path):
        return listing.NOT_UTF8
    problem = listing.problem(path)  # os.stat and stat.S_ISREG: the ExampleGen's own words
    if problem is not None:
        return problem
    try:  # a regular file: opening it cannot block
        with open(path, "rb"):
            pass
    except OSError as e:
        return plain_reason(e)
    return None


def _reason(error: Exception) -> str:
    if isinstance(error, AudioError):  # already plain (components/audio/wav_io.py)
        return str(error)
    if isinstance(error, OSError):
        return plain_reason(error)
    return f"{type(error).__name__}: {error}"


def predict(model_dir: str, inputs: Iterable[str], out_dir: str, hop_s: float = None,
            progress: bool = True, min_segment_s: Optional[float] = None,
            max_duration_s: Optional[float] = None) -> Outcome:
    """Labels every input file (and denoises it); `min_segment_s` (default data.min_segment_s's)
    is the shortest recording labelled and the shortest last window kept, `max_duration_s`
    (data.max_duration_s's) the longest recording read, as the ExampleGen."""
    min_segment_s = DataConfig().min_segment_s if min_segment_s is None else min_segment_s
    max_duration_s = DataConfig().max_duration_s if max_duration_s is None else max_duration_s
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
        for out in (p, w, r):
            out.flush()
        bar = tqdm.tqdm(files, unit="file", disable=not progress, desc="predict")
        for path, name in bar:
            reason = refused(path)
            if reason is None:
                try:
                    result = model.classify(path, hop_s=hop_s, min_window_s=min_segment_s,
                                            max_duration_s=max_duration_s)
                    if model.denoises:
                        enhanced = os.path.join(out_dir, "enhanced", os.path.splitext(name)[0] + ".wav")
                        os.makedirs(os.path.dirname(enhanced), exist_ok=True)
                        model.denoise(path, enhanced)
                except Exception as e:  # one bad file is listed with its reason; the rest go on
                    reason = _reason(e)
            if reason is not None:
                rejects.writerow([listing.shown(path), reason])
                r.flush()
                rejected += 1
                bar.set_postfix(rejected=rejected)
                continue
            per_file.writerow({"file": path, "duration_s": round(result.duration_s, 3),
                               "windows": len(result.starts_s), "label": result.label,
                               **dict(zip(labels, map(float, result.mean_probabilities)))})
            for row in result.rows():
                per_window.writerow({"file": path, **row})
            w.flush()  # its windows before its row: a row in predictions.csv has all of them
            p.flush()
            predicted += 1
    return Outcome(predicted, rejected, out_dir)
