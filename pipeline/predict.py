"""`tfx-audio predict`: audio files or folders through a pushed model.

Writes, under --out:
- predictions.csv: one row a file: its label (the mean of its windows' probabilities) and
  a probability per class;
- windows.csv: one row a window of a file: start, end, label, probabilities;
- enhanced/<file>.wav: the denoised audio (16 kHz mono), when the model denoises;
- rejects.csv: every file that could not be read, with the reason in plain words;
- with data.tracks=split (`--tracks split`): a row per track in predictions.csv and windows.csv
  (`track`, `role` from data.track_roles; windows also their `speech` share), enhanced/ keeps
  the channels (each denoised on its own), and calls.csv a row per call of one or two tracks:
  talk time per role, overtalk seconds and count, silence share, longest silence (by the
  voice-activity detector on the enhanced tracks, `calls.*` settings), the label per role.
Every input file ends up in predictions.csv or rejects.csv, each row flushed as soon as its
file is done (a run stopped halfway keeps the rows before); a file's windows are spooled to a
temporary file until it is done, so a file rejected halfway leaves no rows. An entry that is not a regular
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
import shutil
import tempfile
from typing import Iterable, List, Optional, Sequence, Tuple

import tqdm

from components.audio.wav_io import AudioError, AudioFile
from components.config import CallsConfig, DataConfig
from components.ingest import listing
from components.ingest.segments import SILENT
from components.serving.recording import Aggregate, RecordingModel

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


def roles_of(count: int, track_roles: Sequence[str]) -> List[str]:
    """Each track's role: data.track_roles', else `track<i>`."""
    return [track_roles[t] if t < len(track_roles) else f"track{t}" for t in range(count)]


class _Writers:
    """predictions.csv, windows.csv, rejects.csv (and calls.csv with tracks=split), each row flushed as
    soon as its file is done."""

    def __init__(self, out_dir: str, labels: List[str], roles: Optional[List[str]]):
        self.labels, self.roles = labels, roles
        self._files = []
        track = ["track", "role"] if roles is not None else []
        self.per_file = self._writer(out_dir, "predictions.csv", ["file", *track, "duration_s", "windows", "label",
                                                                  *labels])
        self.per_window = self._writer(out_dir, "windows.csv", ["file", *track, "start_s", "end_s", "label",
                                                                *(["speech"] if roles is not None else []), *labels])
        self.window_file = self._files[-1]
        self.rejects = self._writer(out_dir, "rejects.csv", ["file", "reason"])
        self.calls = None if roles is None else self._writer(out_dir, "calls.csv", [
            "file", "duration_s", "tracks", *(f"{r}_talk_s" for r in roles), "overtalk_s", "overtalk_count",
            "silence_share", "longest_silence_s", *(f"{r}_label" for r in roles)])

    def _writer(self, out_dir: str, name: str, columns: List[str]) -> csv.DictWriter:
        f = open(os.path.join(out_dir, name), "w", newline="")
        self._files.append(f)
        writer = csv.DictWriter(f, columns)
        writer.writeheader()
        f.flush()
        return writer

    def flush(self) -> None:
        for f in self._files:
            f.flush()

    def close(self) -> None:
        for f in self._files:
            f.close()


def _labelled(model: RecordingModel, path: str, track: Optional[int], spool, writers: _Writers, hop_s, min_segment_s,
              max_duration_s, aggressiveness, extra: dict) -> Tuple[dict, bool, str]:
    """One stream's windows into `spool` (windows.csv's rows, copied there once the file is done) ->
    (its predictions.csv row, whether any sample of it is not zero, label). A track of a call may be
    silent throughout (a muted side); the file is refused when all of it is (as the ExampleGen does)."""
    aggregate, count = Aggregate(), 0
    spool_writer = csv.DictWriter(spool, writers.per_window.fieldnames)
    heard = False
    for window in model.windows(path, track, hop_s, min_window_s=min_segment_s, max_duration_s=max_duration_s,
                                vad_aggressiveness=aggressiveness, refuse_silent=track is None):
        heard = heard or window.heard
        aggregate.add(window)
        count += 1
        row = {"file": path, **extra, "start_s": round(window.start_s, 3), "end_s": round(window.end_s, 3),
               "label": window.label, **dict(zip(writers.labels, map(float, window.probabilities)))}
        if window.speech is not None:
            row["speech"] = round(window.speech, 3)
        spool_writer.writerow(row)
    mean = aggregate.mean()
    others = [r for r in writers.roles or [] if r != extra.get("role")]  # what this track's side is not
    label = aggregate.label(writers.labels, ruled_out=others)
    return {"file": path, **extra, "windows": count, "label": label,
            **dict(zip(writers.labels, map(float, mean)))}, heard, label


def _one_file(model: RecordingModel, path: str, name: str, out_dir: str, writers: _Writers, hop_s, min_segment_s,
              max_duration_s, calls: Optional[CallsConfig]) -> None:
    """Labels (and denoises) one file; its rows reach the CSV files only when all of it is done."""
    with AudioFile(path) as audio:
        channels, duration = audio.channels, audio.duration_s
    split = writers.roles is not None
    tracks = list(range(channels)) if split else [None]
    roles = roles_of(channels, writers.roles or [])
    enhanced = os.path.join(out_dir, "enhanced", os.path.splitext(name)[0] + ".wav")
    with tempfile.TemporaryFile("w+", newline="") as spool:
        rows, heard = [], False
        for track in tracks:
            extra = {} if track is None else {"track": track, "role": roles[track]}
            row, track_heard, label = _labelled(model, path, track, spool, writers, hop_s, min_segment_s,
                                                max_duration_s, None if calls is None else calls.vad_aggressiveness,
                                                extra)
            heard = heard or track_heard
            rows.append((row, label))
        if not heard:
            raise AudioError(SILENT)
        if model.denoises:
            os.makedirs(os.path.dirname(enhanced), exist_ok=True)
        figures = None
        if split and channels <= 2:  # writes the enhanced tracks too
            figures = model.call_figures(path, calls, enhanced)
        elif model.denoises and split:
            model.denoise_tracks(path, enhanced)
        elif model.denoises:
            model.denoise(path, enhanced)
        spool.seek(0)  # the file's windows before its rows: a row in predictions.csv has all of them
        shutil.copyfileobj(spool, writers.window_file)
    for row, _ in rows:
        writers.per_file.writerow({**row, "duration_s": round(duration, 3)})
    if figures is not None:
        writers.calls.writerow({"file": path, "duration_s": round(duration, 3), "tracks": channels,
                                **figures.row(roles), **{f"{roles[t]}_label": label for t, (_, label) in
                                                         enumerate(rows)}})


def predict(model_dir: str, inputs: Iterable[str], out_dir: str, hop_s: float = None,
            progress: bool = True, min_segment_s: Optional[float] = None,
            max_duration_s: Optional[float] = None, tracks: str = "mix", track_roles: Sequence[str] = (),
            calls: Optional[CallsConfig] = None) -> Outcome:
    """Labels every input file (and denoises it); `min_segment_s` (default data.min_segment_s's)
    is the shortest recording labelled and the shortest last window kept, `max_duration_s`
    (data.max_duration_s's) the longest recording read, as the ExampleGen. With `tracks="split"`
    (data.tracks) each channel is labelled on its own, as `track_roles` name them, the enhanced
    file keeps the channels, and calls.csv gets a row per file of one or two tracks (`calls`: the
    call figures' settings)."""
    min_segment_s = DataConfig().min_segment_s if min_segment_s is None else min_segment_s
    max_duration_s = DataConfig().max_duration_s if max_duration_s is None else max_duration_s
    calls = calls or CallsConfig()
    model = RecordingModel(model_dir)
    files = input_files(inputs)
    os.makedirs(out_dir, exist_ok=True)
    split = tracks == "split"
    writers = _Writers(out_dir, list(model.labels), roles_of(2, track_roles) if split else None)
    predicted = rejected = 0
    try:
        bar = tqdm.tqdm(files, unit="file", disable=not progress, desc="predict")
        for path, name in bar:
            reason = refused(path)
            if reason is None:
                try:
                    _one_file(model, path, name, out_dir, writers, hop_s, min_segment_s, max_duration_s,
                              calls if split else None)
                except Exception as e:  # one bad file is listed with its reason; the rest go on
                    reason = _reason(e)
            if reason is not None:
                writers.rejects.writerow({"file": listing.shown(path), "reason": reason})
                rejected += 1
                bar.set_postfix(rejected=rejected)
            else:
                predicted += 1
            writers.flush()
    finally:
        writers.close()
    return Outcome(predicted, rejected, out_dir)
