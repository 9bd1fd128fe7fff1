"""The WAV ExampleGen's reading step: one recording (with its metadata row and spans) in, a tf.Example
per window out, or one reject record with the reason; and the seconds accounting of each file."""
from __future__ import annotations

import os
import re
import time
from typing import Any, Dict, Iterable, List, Optional, Tuple

import apache_beam as beam
import numpy as np
import tensorflow as tf
from absl import logging
from apache_beam.io.filesystems import FileSystems

from components import features, progress_lines
from components.audio import snr as snr_metrics
from components.audio import vad, wav_io
from components.ingest import listing, segments, tables
from components.ingest import spans as spans_lib
from components.ingest.report import REJECTS_TAG, SECONDS_TAG

_PROGRESS_EVERY_S = 10.0
_CLEAN_SLACK_S = 0.05  # a clean reference may be this much shorter or longer (codec padding); zeros past its end


def _feature(value) -> tf.train.Feature:
    if isinstance(value, bytes):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
    if isinstance(value, int):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
    return tf.train.Feature(float_list=tf.train.FloatList(value=[value]))


def _input_snr(given: str, whole_file: bool, clean: Optional[np.ndarray], noisy: np.ndarray) -> Optional[float]:
    """The window's input SNR: measured against the clean reference where there is one
    (metadata's file-level `snr_db` only when the window is the whole file); else the
    given `snr_db`; None when unknown or undefined (silent reference)."""
    if given and (whole_file or clean is None):
        try:
            return float(given)
        except ValueError as e:
            raise wav_io.AudioError(f"snr_db {given!r} is not a number") from e
    if clean is None:
        return None
    n = min(len(clean), len(noisy))
    measured = snr_metrics.snr_db(clean[:n], noisy[:n])
    return None if measured is None else round(measured, 2)


def speech_regions(audio: wav_io.AudioFile, options: Dict[str, Any]) -> List[segments.Interval]:
    """Speech regions of a file (components/audio/vad.py), read block by block."""
    frames = vad.VadFrames(int(options["vad_aggressiveness"]))
    stream = segments.RegionStream(vad.FRAME_S, float(options["vad_min_gap_s"]), float(options["vad_pad_s"]))
    regions: List[segments.Interval] = []
    for block in audio.blocks_16k():
        regions += stream.push(frames.push(block))
    return regions + stream.finish(audio.duration_s)


def _on_track(spans: Optional[List[tables.Span]], track: Optional[int]) -> Optional[List[Tuple[float, float, str]]]:
    """The spans of one track (those naming it, and those naming none); with None, of every track."""
    if spans is None:
        return None
    return [(s, e, label) for s, e, label, t in spans if track is None or t is None or t == track]


def _check_no_overlap(spans: List[tables.Span]) -> None:
    """data.tracks=mix: spans of different tracks become spans of one stream; they must not overlap."""
    ordered = sorted(spans)
    for (_, prev_end, _, _), (start, _, _, track) in zip(ordered, ordered[1:]):
        if start < prev_end:
            raise wav_io.AudioError(f"segments.csv: spans of different tracks overlap at {start:.3f} s, and "
                                    f"data.tracks=mix makes the tracks one stream: set data.tracks=split")


class ToExamples(beam.DoFn):
    """One recording (with its metadata and spans) -> a tf.Example per window, plus its
    seconds accounting; or a reject record with the reason."""

    def __init__(self, input_base: str, options: Dict[str, Any]):
        try:
            self._group_pattern = re.compile(options["group_regex"]) if options["group_regex"] else None
        except re.error as e:
            raise ValueError(f"data.group_regex {options['group_regex']!r} is not a regular expression: {e}")
        self._input_base = input_base
        self._options = options
        self._rejected = beam.metrics.Metrics.counter("wav_example_gen", "rejected")
        self._accepted = beam.metrics.Metrics.counter("wav_example_gen", "accepted")

    def setup(self):
        # Progress of this DoFn instance (one per worker thread), logged every _PROGRESS_EVERY_S.
        self._files, self._seconds_read = 0, 0.0
        self._started = self._logged = time.monotonic()

    def _progress(self) -> None:
        self._files += 1
        now = time.monotonic()
        if now - self._logged >= _PROGRESS_EVERY_S:
            self._logged, took = now, now - self._started
            progress_lines.log("WavExampleGen: a worker has read %d files, %.0f s of audio, in %.0f s "
                               "(%.1f files/s, %.0fx real time)", self._files, self._seconds_read, took,
                               self._files / took, self._seconds_read / took)

    def _path(self, name: str) -> str:
        """input_base/name; refused when it leaves input_base (an absolute name, `..`, or
        a symbolic link to elsewhere, /dev/zero included)."""
        path = os.path.join(self._input_base, name)
        if "://" in self._input_base:  # object stores: no links, but no climbing out either
            if name.startswith("/") or ".." in name.split("/"):
                raise wav_io.AudioError(f"{name} is outside input_base")
            return path
        real, base = os.path.realpath(path), os.path.realpath(self._input_base)
        if os.path.commonpath([real, base]) != base:
            raise wav_io.AudioError(f"outside input_base: {name} leads out of it (an absolute path, "
                                      f"'..' or a symbolic link); not read")
        return path

    def _open(self, name: str) -> wav_io.AudioFile:
        """The file opened for reading windows, after its path and size are checked."""
        path = self._path(name)
        if "://" in path:  # object stores: Beam's match (its name is taken as a pattern there)
            found = FileSystems.match([path])[0].metadata_list
            size = found[0].size_in_bytes if found else None
        else:  # a local name may hold [ ] * ? literally; what is not a regular file is never opened
            refused = listing.problem(path)
            if refused:
                raise wav_io.AudioError(refused)
            size = os.path.getsize(path)
        if size is None:
            raise wav_io.AudioError(f"{name} does not exist or is not a file")
        limit = float(self._options["max_file_mb"])
        if size > limit * 2 ** 20:
            raise wav_io.AudioError(f"{size / 2 ** 20:.2f} MB, over the {limit:g} MB limit (data.max_file_mb)")
        return wav_io.AudioFile(path)

    def _names(self, source: str, meta: Dict[str, str]) -> Tuple[str, str]:
        """(label folder part, clean reference name); under a span folder, from inside it."""
        depth = spans_lib.span_depth(self._options.get("span_pattern") or "") or 0
        span_folder = "".join(part + "/" for part in source.split("/")[:depth])
        clean_name, folders = meta.get(features.CLEAN_FILE_NAME, ""), source[len(span_folder):]
        if self._options["layout"] == "paired":
            if not folders.startswith(features.NOISY_DIR):
                raise wav_io.AudioError(
                    f"data.layout=paired reads files under {span_folder}{features.NOISY_DIR} only")
            folders = folders[len(features.NOISY_DIR):]
            clean_name = clean_name or span_folder + features.CLEAN_DIR + folders
            if not FileSystems.exists(self._path(clean_name)):
                raise wav_io.AudioError(f"paired layout: no clean reference {clean_name}")
        return folders, clean_name

    def _group(self, source: str, meta: Dict[str, str], clean_name: str) -> str:
        """The split key: metadata.csv's group, else the first capture of data.group_regex on
        the file name, else (folders layout only) the recording itself."""
        if meta.get(features.GROUP):
            return meta[features.GROUP]
        if self._group_pattern is not None:
            found = self._group_pattern.search(source)
            if not found:
                raise wav_io.AudioError(f"its name does not match data.group_regex {self._group_pattern.pattern!r}"
                                          f" and metadata.csv gives it no group")
            return found.group(1) if found.groups() else found.group(0)
        if self._options["layout"] == "paired":  # many pairs per speaker: one group each would leak
            raise wav_io.AudioError(
                "paired layout: no speaker group; give a group column in metadata.csv or data.group_regex "
                "(VoiceBank-DEMAND: '(p[0-9]+)_'), else a speaker's recordings land in several splits")
        return clean_name or source

    def _plan(self, audio: wav_io.AudioFile, label: str, spans, speech_source) -> segments.Plan:
        o = self._options
        background = o["background_label"] if o["unlabelled_spans"] == "background" else None
        spans = spans if spans is not None else [(0.0, audio.duration_s, label)]
        speech = speech_regions(speech_source, o) if o["segmentation"] == "vad" else None
        return segments.plan(audio.duration_s, spans, background, o["segment_s"], o["hop_s"],
                             float(o["min_segment_s"]), speech)

    def process(self, keyed: Tuple[str, Dict[str, List[Any]]]) -> Iterable[Any]:
        yield from self._file(keyed)
        self._progress()

    def _file(self, keyed: Tuple[str, Dict[str, List[Any]]]) -> Iterable[Any]:
        source, grouped = keyed
        metas, spans = grouped["meta"], grouped["spans"]
        meta = metas[0] if metas else {}
        seconds = None  # unknown until the header is read
        refused = [f for f in grouped["file"] if isinstance(f, str)]  # at listing (listing.listed)
        # Entries shown under one name (a<0xff>.wav and a UTF-8 name spelling its escape, `a\\xff.wav`):
        # one reject each, and the one that can be read is read.
        readable = True in grouped["file"]
        for reason in refused if readable else refused[1:]:
            yield from self._reject(source, reason, None)
        refused = [] if readable else refused[:1]
        try:
            if refused:
                raise wav_io.AudioError(refused[0])
            if not grouped["file"] and not FileSystems.exists(self._path(source)):
                where = "metadata.csv" if metas else "segments.csv"
                raise wav_io.AudioError(f"listed in {where} but the file does not exist")
            with self._open(source) as audio:
                seconds = audio.duration_s
                self._seconds_read += seconds
                if seconds > float(self._options["max_duration_s"]):
                    raise wav_io.AudioError(f"{seconds:.1f} s long, over the "
                                              f"{self._options['max_duration_s']} s limit (data.max_duration_s)")
                folders, clean_name = self._names(source, meta)
                try:
                    clean = self._open(clean_name) if clean_name else None
                except wav_io.AudioError as e:
                    raise wav_io.AudioError(f"clean reference {clean_name}: {e}") from e
                try:
                    file_spans = spans[0] if spans else None
                    if self._options.get("tracks") == "split":
                        yield from self._tracks(source, meta, file_spans, folders, audio, clean, clean_name)
                    else:
                        if file_spans is not None and any(s[3] is not None for s in file_spans):
                            _check_no_overlap(file_spans)
                        yield from self._windows(source, meta, _on_track(file_spans, None), folders, audio, clean,
                                                 clean_name)
                finally:
                    if clean is not None:
                        clean.close()
        except wav_io.AudioError as e:
            yield from self._reject(source, str(e), seconds)

    def _tracks(self, source, meta, spans, folders, audio, clean, clean_name) -> Iterable[Any]:
        """data.tracks=split: each channel its own stream, with `track` and `role` (a one-channel file: the
        track metadata.csv gives it, one side of a call kept as two files, else 0); one seconds record for
        the file (its tracks' seconds); a track without an example has its seconds dropped with the reason,
        and the file is rejected only when no track has one."""
        if clean is not None and clean.channels != audio.channels:
            raise wav_io.AudioError(f"clean reference {clean_name} has {clean.channels} channel(s), the recording "
                                    f"{audio.channels}: with data.tracks=split each track needs its own reference")
        side = meta.get(features.TRACK)  # one side of a call kept as two files: metadata.csv names its track
        if side and audio.channels != 1:
            raise wav_io.AudioError(f"metadata.csv gives track {side} to a file of {audio.channels} channels: only a "
                                    f"one-channel file (one side of a call) takes a track there")
        held = [int(side)] if side else list(range(audio.channels))
        if spans is not None and any(s[3] is not None and s[3] not in held for s in spans):
            raise wav_io.AudioError(f"segments.csv names a track this file does not hold (its tracks: "
                                    f"{', '.join(map(str, held))})")
        total = {"seconds_in": 0.0, "seconds_in_examples": 0.0, "dropped": {}, "tracks": audio.channels}
        failures = []
        for track in range(audio.channels):
            audio.track = track
            if clean is not None:
                clean.track = track
            named = int(side) if side else track
            try:
                for out in self._windows(source, meta, _on_track(spans, named), folders, audio, clean, clean_name,
                                         named):
                    if isinstance(out, beam.pvalue.TaggedOutput):  # the track's seconds
                        for key in ("seconds_in", "seconds_in_examples"):
                            total[key] += out.value[key]
                        for reason, lost in out.value["dropped"].items():
                            total["dropped"][reason] = total["dropped"].get(reason, 0.0) + lost
                    else:
                        yield out
            except wav_io.AudioError as e:  # _windows raises before its first example
                failures.append(f"track {named}: {e}")
                total["seconds_in"] += audio.duration_s
                # a few reasons for the whole corpus, not one per file's numbers
                reason = "a track without an example" + (f": {segments.SILENT}" if str(e) == segments.SILENT else "")
                total["dropped"][reason] = total["dropped"].get(reason, 0.0) + audio.duration_s
        if len(failures) == audio.channels:
            raise wav_io.AudioError("; ".join(failures))
        self._accepted.inc()
        yield beam.pvalue.TaggedOutput(SECONDS_TAG, total)

    def _windows(self, source, meta, spans, folders, audio, clean, clean_name,
                 track: Optional[int] = None) -> Iterable[Any]:
        """The examples of one stream (the file, or one track of it) and its seconds record (the
        SECONDS_TAG output, last); raises AudioError before its first example when it has none."""
        if clean is not None and abs(clean.duration_s - audio.duration_s) > _CLEAN_SLACK_S:
            raise wav_io.AudioError(f"clean reference {clean_name} is {clean.duration_s:.3f} s, the noisy "
                                      f"file {audio.duration_s:.3f} s: they must match within {_CLEAN_SLACK_S} s")
        label = meta.get(features.LABEL) or (folders.split("/")[0] if "/" in folders else "")
        if not label and spans is None:
            where = f"{features.NOISY_DIR}<label>/" if self._options["layout"] == "paired" else "<label>/"
            raise wav_io.AudioError(f"no label: put the file in a {where} folder, list it in "
                                      f"metadata.csv or give its spans in segments.csv")
        plan = self._plan(audio, label, spans, clean or audio)
        if not plan.windows:
            raise wav_io.AudioError("no example in it: " + ", ".join(
                f"{s:.2f} s {reason}" for reason, s in sorted(plan.dropped_s.items())))
        group = self._group(source, meta, clean_name)
        whole = len(plan.windows) == 1 and plan.windows[0].duration_s >= audio.duration_s - 1e-6
        written: List[segments.Interval] = []
        silent: List[segments.Interval] = []
        failure = ""
        try:
            for window in plan.windows:
                noisy_audio, stats = audio.window_and_stats(window.start_s, window.end_s)
                if not np.any(noisy_audio):  # all-zero samples: nothing to learn or to denoise
                    silent.append((window.start_s, window.end_s))
                    continue
                reference = clean.window(window.start_s, window.end_s, pad=True) if clean is not None else None
                yield self._example(source, meta, group, window, noisy_audio, reference, whole, stats, track)
                written.append((window.start_s, window.end_s))
        except wav_io.AudioError as e:  # a file truncated after some windows: keep those
            if not written:
                raise
            failure = str(e)
        if not written:
            raise wav_io.AudioError(segments.SILENT)
        covered = segments.union_length(written)
        read = segments.union_length(written + silent)  # what was read before any failure
        dropped = dict(plan.dropped_s)
        for reason, lost in ((segments.SILENT, read - covered), (failure, plan.covered_s - read)):
            if lost > 1e-6:
                dropped[reason] = dropped.get(reason, 0.0) + lost
        if track is None:
            self._accepted.inc()
        yield beam.pvalue.TaggedOutput(SECONDS_TAG, {
            "seconds_in": audio.duration_s, "seconds_in_examples": covered, "dropped": dropped})

    def _example(self, source, meta, group, window: segments.Window, noisy, clean, whole,
                 stats: Dict[str, float], track: Optional[int] = None) -> tf.train.Example:
        feats = {key: _feature(value) for key, value in stats.items()}
        feats.update({
            features.AUDIO: _feature(wav_io.encode_pcm16_wav(noisy)),
            features.LABEL: _feature(window.label.encode()),
            features.GROUP: _feature(group.encode()),
            features.SOURCE: _feature(source.encode()),
            features.DURATION_S: _feature(len(noisy) / features.SAMPLE_RATE),
            features.OFFSET_S: _feature(window.start_s),
            features.SEGMENT_INDEX: _feature(window.index),
        })
        if clean is not None:
            feats[features.CLEAN_AUDIO] = _feature(wav_io.encode_pcm16_wav(clean))
        if meta.get(features.NOISE_KIND):
            feats[features.NOISE_KIND] = _feature(meta[features.NOISE_KIND].encode())
        if meta.get(features.CHANNEL):
            feats[features.CHANNEL] = _feature(meta[features.CHANNEL].encode())
        if track is not None:
            roles = self._options.get("track_roles") or []
            feats[features.TRACK] = _feature(track)
            feats[features.ROLE] = _feature((roles[track] if track < len(roles) else f"track{track}").encode())
        snr = _input_snr(meta.get(features.SNR_DB, ""), whole, clean, noisy)
        if snr is not None:
            feats[features.SNR_DB] = _feature(snr)
        return tf.train.Example(features=tf.train.Features(feature=feats))

    def _reject(self, source: str, reason: str, seconds: Optional[float]) -> Iterable[Any]:
        self._rejected.inc()
        logging.warning("WAV ExampleGen rejects %s: %s", source, reason)
        yield beam.pvalue.TaggedOutput(REJECTS_TAG, {"source": source, "reason": reason,
                                                     "seconds": None if seconds is None else round(seconds, 6)})
