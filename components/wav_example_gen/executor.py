"""WAV ExampleGen executor: reads recordings with Beam and writes one tf.Example per window.

Input: `input_base/<label>/*.wav` (the split pattern), an optional audiofolder-style
`metadata.csv` (`file_name,label[,group,clean_file_name,noise_kind,snr_db,channel]`) and
an optional `segments.csv` (`file_name,start_s,end_s,label`) of labelled spans.
With `layout=paired` (VoiceBank-DEMAND style), files under `noisy/` take `clean/` +
the same relative path as their clean reference.

Recordings of any length are cut into windows (`segments.plan`): fixed windows of
`segment_s` every `hop_s`, or speech regions found by voice-activity detection,
inside the labelled spans (gaps dropped or labelled `background`). Only the
windows are read from the files, so a worker's memory is bounded by a window.
Every file ends up as examples or as a line in `ingest_report/rejects.jsonl`, and
every second of input is accounted in `ingest_report/seconds.json`: seconds in =
seconds in examples + seconds dropped (by reason) + seconds of rejected files.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import time
from typing import Any, Dict, Iterable, List, Optional, Tuple

import apache_beam as beam
import numpy as np
import tensorflow as tf
import webrtcvad
from absl import logging
from apache_beam.io import fileio
from apache_beam.io.filesystems import FileSystems
from google.protobuf import json_format, struct_pb2
from tfx.components.example_gen import utils as example_gen_utils
from tfx.components.example_gen import write_split
from tfx.components.example_gen.base_example_gen_executor import BaseExampleGenExecutor
from tfx.components.util import examples_utils
from tfx.proto import example_gen_pb2
from tfx.types import artifact_utils, standard_component_specs
from tfx.utils import proto_utils

from components import audio_io, features, progress_lines, snr_metrics
from components.config import EXAMPLE_COMPRESSIONS, INGEST_OPTIONS, LAYOUTS, SEGMENTATIONS, DataConfig, FeatureConfig
from components.wav_example_gen import noise_mix, segments
from components.wav_example_gen import spans as spans_lib

REPORT_DIR_KEY = "_tfx_audio_report_dir"
REJECTS_FILE = "rejects.jsonl"
SECONDS_FILE = "seconds.json"
ACCEPTED_FILE = "accepted_count.txt"
AUGMENTED_FILE = "noisy_copies_count.txt"
SPLIT_SIZE_FILE = "split-{}.json"  # {"examples": N, "bytes": serialized bytes} of one split
REJECTS_TAG, SECONDS_TAG = "rejects", "seconds"
_PROGRESS_EVERY_S = 10.0
NOISY_DIR, CLEAN_DIR = "noisy/", "clean/"  # the paired layout's folders
_METADATA_COLUMNS = ("file_name", "label", "group", "clean_file_name", "noise_kind", "snr_db", "channel")
_SEGMENT_COLUMNS = ("file_name", "start_s", "end_s", "label")
_VAD_FRAME = 480  # 30 ms at 16 kHz, a frame size webrtcvad takes
_CLEAN_SLACK_S = 0.05  # a clean reference may be this much shorter or longer (codec padding); zeros past its end


def ingest_options(exec_properties: Dict[str, Any]) -> Dict[str, Any]:
    """The component's options, packed as a Struct in example_gen_pb2.CustomConfig."""
    options: Dict[str, Any] = {}
    raw = exec_properties.get(standard_component_specs.CUSTOM_CONFIG_KEY)
    if raw:
        custom_config = example_gen_pb2.CustomConfig()
        proto_utils.json_to_proto(raw, custom_config)
        struct = struct_pb2.Struct()
        if custom_config.custom_config.Unpack(struct):
            options = json_format.MessageToDict(struct)
    defaults = DataConfig()  # the one place the defaults live
    merged = {**{name: getattr(defaults, name) for name in INGEST_OPTIONS}, **options}
    merged["segment_s"] = float(merged["segment_s"] or FeatureConfig().clip_seconds)
    merged["hop_s"] = float(merged["hop_s"] or merged["segment_s"])
    return merged


def _read_csv(path: str, required: Tuple[str, ...], columns: Tuple[str, ...]) -> List[Tuple[int, Dict[str, str]]]:
    with FileSystems.open(path) as f:
        reader = csv.DictReader(io.StringIO(f.read().decode("utf-8-sig")))
    missing = set(required) - set(reader.fieldnames or [])
    if missing:
        raise ValueError(f"{path}: header lacks required column(s) {sorted(missing)}; "
                         f"expected {','.join(columns)}")
    rows = []
    for line_no, row in enumerate(reader, start=2):
        row = {k: (row.get(k) or "").strip() for k in columns}
        if not row["file_name"]:
            raise ValueError(f"{path}:{line_no}: empty file_name")
        rows.append((line_no, row))
    return rows


def read_metadata(input_base: str, metadata_file: str) -> Dict[str, Dict[str, str]]:
    """Reads metadata.csv into {file_name: row}; a missing file means no metadata."""
    path = os.path.join(input_base, metadata_file)
    if not metadata_file or not FileSystems.exists(path):
        return {}
    rows: Dict[str, Dict[str, str]] = {}
    for line_no, row in _read_csv(path, ("file_name", "label"), _METADATA_COLUMNS):
        if row["file_name"] in rows:
            raise ValueError(f"{path}:{line_no}: {row['file_name']} is listed twice")
        rows[row["file_name"]] = row
    return rows


def read_segments(input_base: str, segments_file: str) -> Dict[str, List[Tuple[float, float, str]]]:
    """Reads segments.csv into {file_name: [(start_s, end_s, label)]}, checked: numbers,
    end after start, a label, no overlap within a file."""
    path = os.path.join(input_base, segments_file)
    if not segments_file or not FileSystems.exists(path):
        return {}
    spans: Dict[str, List[Tuple[float, float, str, int]]] = {}
    for line_no, row in _read_csv(path, _SEGMENT_COLUMNS, _SEGMENT_COLUMNS):
        try:
            start, end = float(row["start_s"]), float(row["end_s"])
        except ValueError:
            raise ValueError(f"{path}:{line_no}: start_s {row['start_s']!r} and end_s {row['end_s']!r} "
                             f"must be numbers of seconds") from None
        if not 0 <= start < end or not row["label"]:
            raise ValueError(f"{path}:{line_no}: a span needs 0 <= start_s < end_s and a label")
        spans.setdefault(row["file_name"], []).append((start, end, row["label"], line_no))
    out = {}
    for name, rows in spans.items():
        rows.sort()
        for (_, prev_end, _, prev_line), (start, _, _, line_no) in zip(rows, rows[1:]):
            if start < prev_end:
                raise ValueError(f"{path}:{line_no}: span of {name} overlaps the one on line {prev_line}")
        out[name] = [(s, e, label) for s, e, label, _ in rows]
    return out


def _relative(path: str, input_base: str) -> str:
    base = input_base.rstrip("/") + "/"
    return path[len(base):] if path.startswith(base) else path


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
            raise audio_io.AudioError(f"snr_db {given!r} is not a number") from e
    if clean is None:
        return None
    n = min(len(clean), len(noisy))
    measured = snr_metrics.snr_db(clean[:n], noisy[:n])
    return None if measured is None else round(measured, 2)


def speech_regions(audio: audio_io.AudioFile, options: Dict[str, Any]) -> List[segments.Interval]:
    """Speech regions of a file by WebRTC's voice-activity detector (webrtcvad-wheels:
    a maintained C detector needing no model download), read block by block."""
    vad = webrtcvad.Vad(int(options["vad_aggressiveness"]))
    flags: List[bool] = []
    rest = np.zeros(0, np.int16)
    for block in audio.blocks_16k():
        pcm = np.concatenate([rest, (np.clip(block, -1, 1) * 32767).astype(np.int16)])
        whole = len(pcm) // _VAD_FRAME * _VAD_FRAME
        flags += [vad.is_speech(pcm[i:i + _VAD_FRAME].tobytes(), features.SAMPLE_RATE)
                  for i in range(0, whole, _VAD_FRAME)]
        rest = pcm[whole:]
    return segments.speech_regions(flags, _VAD_FRAME / features.SAMPLE_RATE, float(options["vad_min_gap_s"]),
                                   float(options["vad_pad_s"]), audio.duration_s)


class _ToExamples(beam.DoFn):
    """One recording (with its metadata and spans) -> a tf.Example per window, plus its
    seconds accounting; or a reject record with the reason."""

    def __init__(self, input_base: str, options: Dict[str, Any]):
        if options["layout"] not in LAYOUTS:
            raise ValueError(f"data.layout {options['layout']!r}: expected one of {LAYOUTS}")
        if options["segmentation"] not in SEGMENTATIONS:
            raise ValueError(f"data.segmentation {options['segmentation']!r}: expected one of {SEGMENTATIONS}")
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
                raise audio_io.AudioError(f"{name} is outside input_base")
            return path
        real, base = os.path.realpath(path), os.path.realpath(self._input_base)
        if os.path.commonpath([real, base]) != base:
            raise audio_io.AudioError(f"outside input_base: {name} leads out of it (an absolute path, "
                                      f"'..' or a symbolic link); not read")
        return path

    def _open(self, name: str) -> audio_io.AudioFile:
        """The file opened for reading windows, after its path and size are checked."""
        path = self._path(name)
        if "://" in path:  # object stores: Beam's match (its name is taken as a pattern there)
            found = FileSystems.match([path])[0].metadata_list
            size = found[0].size_in_bytes if found else None
        else:  # a local name may hold [ ] * ? literally
            size = os.path.getsize(path) if os.path.isfile(path) else None
        if size is None:
            raise audio_io.AudioError(f"{name} does not exist or is not a file")
        limit = float(self._options["max_file_mb"])
        if size > limit * 2 ** 20:
            raise audio_io.AudioError(f"{size / 2 ** 20:.2f} MB, over the {limit:g} MB limit (data.max_file_mb)")
        return audio_io.AudioFile(path)

    def _names(self, source: str, meta: Dict[str, str]) -> Tuple[str, str]:
        """(label folder part, clean reference name); under a span folder, from inside it."""
        depth = spans_lib.span_depth(self._options.get("span_pattern") or "") or 0
        span_folder = "".join(part + "/" for part in source.split("/")[:depth])
        clean_name, folders = meta.get("clean_file_name", ""), source[len(span_folder):]
        if self._options["layout"] == "paired":
            if not folders.startswith(NOISY_DIR):
                raise audio_io.AudioError(f"data.layout=paired reads files under {span_folder}{NOISY_DIR} only")
            folders = folders[len(NOISY_DIR):]
            clean_name = clean_name or span_folder + CLEAN_DIR + folders
            if not FileSystems.exists(self._path(clean_name)):
                raise audio_io.AudioError(f"paired layout: no clean reference {clean_name}")
        return folders, clean_name

    def _group(self, source: str, meta: Dict[str, str], clean_name: str) -> str:
        """The split key: metadata.csv's group, else the first capture of data.group_regex on
        the file name, else (folders layout only) the recording itself."""
        if meta.get("group"):
            return meta["group"]
        if self._group_pattern is not None:
            found = self._group_pattern.search(source)
            if not found:
                raise audio_io.AudioError(f"its name does not match data.group_regex {self._group_pattern.pattern!r}"
                                          f" and metadata.csv gives it no group")
            return found.group(1) if found.groups() else found.group(0)
        if self._options["layout"] == "paired":  # many pairs per speaker: one group each would leak
            raise audio_io.AudioError(
                "paired layout: no speaker group; give a group column in metadata.csv or data.group_regex "
                "(VoiceBank-DEMAND: '(p[0-9]+)_'), else a speaker's recordings land in several splits")
        return clean_name or source

    def _plan(self, audio: audio_io.AudioFile, label: str, spans, speech_source) -> segments.Plan:
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
        try:
            if not grouped["file"] and not FileSystems.exists(self._path(source)):
                where = "metadata.csv" if metas else "segments.csv"
                raise audio_io.AudioError(f"listed in {where} but the file does not exist")
            with self._open(source) as audio:
                seconds = audio.duration_s
                self._seconds_read += seconds
                if seconds > float(self._options["max_duration_s"]):
                    raise audio_io.AudioError(f"{seconds:.1f} s long, over the "
                                              f"{self._options['max_duration_s']} s limit (data.max_duration_s)")
                folders, clean_name = self._names(source, meta)
                try:
                    clean = self._open(clean_name) if clean_name else None
                except audio_io.AudioError as e:
                    raise audio_io.AudioError(f"clean reference {clean_name}: {e}") from e
                try:
                    yield from self._windows(source, meta, spans[0] if spans else None, folders,
                                             audio, clean, clean_name)
                finally:
                    if clean is not None:
                        clean.close()
        except audio_io.AudioError as e:
            yield from self._reject(source, str(e), seconds)

    def _windows(self, source, meta, spans, folders, audio, clean, clean_name) -> Iterable[Any]:
        if clean is not None and abs(clean.duration_s - audio.duration_s) > _CLEAN_SLACK_S:
            raise audio_io.AudioError(f"clean reference {clean_name} is {clean.duration_s:.3f} s, the noisy "
                                      f"file {audio.duration_s:.3f} s: they must match within {_CLEAN_SLACK_S} s")
        label = meta.get("label") or (folders.split("/")[0] if "/" in folders else "")
        if not label and spans is None:
            where = f"{NOISY_DIR}<label>/" if self._options["layout"] == "paired" else "<label>/"
            raise audio_io.AudioError(f"no label: put the file in a {where} folder, list it in "
                                      f"metadata.csv or give its spans in segments.csv")
        plan = self._plan(audio, label, spans, clean or audio)
        if not plan.windows:
            raise audio_io.AudioError("no example in it: " + ", ".join(
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
                yield self._example(source, meta, group, window, noisy_audio, reference, whole, stats)
                written.append((window.start_s, window.end_s))
        except audio_io.AudioError as e:  # a file truncated after some windows: keep those
            if not written:
                raise
            failure = str(e)
        if not written:
            raise audio_io.AudioError(segments.SILENT)
        covered = segments.union_length(written)
        read = segments.union_length(written + silent)  # what was read before any failure
        dropped = dict(plan.dropped_s)
        for reason, lost in ((segments.SILENT, read - covered), (failure, plan.covered_s - read)):
            if lost > 1e-6:
                dropped[reason] = dropped.get(reason, 0.0) + lost
        self._accepted.inc()
        yield beam.pvalue.TaggedOutput(SECONDS_TAG, {
            "seconds_in": audio.duration_s, "seconds_in_examples": covered, "dropped": dropped})

    def _example(self, source, meta, group, window: segments.Window, noisy, clean, whole,
                 stats: Dict[str, float]) -> tf.train.Example:
        feats = {key: _feature(value) for key, value in stats.items()}
        feats.update({
            features.AUDIO: _feature(audio_io.encode_pcm16_wav(noisy)),
            features.LABEL: _feature(window.label.encode()),
            features.GROUP: _feature(group.encode()),
            features.SOURCE: _feature(source.encode()),
            features.DURATION_S: _feature(len(noisy) / features.SAMPLE_RATE),
            features.OFFSET_S: _feature(window.start_s),
            features.SEGMENT_INDEX: _feature(window.index),
        })
        if clean is not None:
            feats[features.CLEAN_AUDIO] = _feature(audio_io.encode_pcm16_wav(clean))
        if meta.get("noise_kind"):
            feats[features.NOISE_KIND] = _feature(meta["noise_kind"].encode())
        if meta.get("channel"):
            feats[features.CHANNEL] = _feature(meta["channel"].encode())
        snr = _input_snr(meta.get("snr_db", ""), whole, clean, noisy)
        if snr is not None:
            feats[features.SNR_DB] = _feature(snr)
        return tf.train.Example(features=tf.train.Features(feature=feats))

    def _reject(self, source: str, reason: str, seconds: Optional[float]) -> Iterable[Any]:
        self._rejected.inc()
        logging.warning("WAV ExampleGen rejects %s: %s", source, reason)
        yield beam.pvalue.TaggedOutput(REJECTS_TAG, {"source": source, "reason": reason,
                                                     "seconds": None if seconds is None else round(seconds, 6)})


class _SumSeconds(beam.CombineFn):
    """Totals of the per-file seconds records (accepted files) and of rejected seconds."""

    def create_accumulator(self):
        return {"accepted_files": 0, "seconds_in": 0.0, "seconds_in_examples": 0.0, "seconds_rejected": 0.0,
                "rejected_of_unknown_length": 0, "dropped": {}}

    def add_input(self, acc, record):
        if "reason" in record:  # a rejected file: its length, when its header was read
            if record["seconds"] is None:
                acc["rejected_of_unknown_length"] += 1
            else:
                acc["seconds_in"] += record["seconds"]
                acc["seconds_rejected"] += record["seconds"]
        else:
            acc["accepted_files"] += 1
            acc["seconds_in"] += record["seconds_in"]
            acc["seconds_in_examples"] += record["seconds_in_examples"]
        for reason, seconds in record.get("dropped", {}).items():
            acc["dropped"][reason] = acc["dropped"].get(reason, 0.0) + seconds
        return acc

    def merge_accumulators(self, accumulators):
        out = self.create_accumulator()
        for acc in accumulators:
            for key in ("accepted_files", "seconds_in", "seconds_in_examples", "seconds_rejected",
                        "rejected_of_unknown_length"):
                out[key] += acc[key]
            for reason, seconds in acc["dropped"].items():
                out["dropped"][reason] = out["dropped"].get(reason, 0.0) + seconds
        return out

    def extract_output(self, acc):
        return acc


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(tf.train.Example)
def _WavToExample(pipeline: beam.Pipeline, exec_properties: Dict[str, Any],
                  split_pattern: str) -> beam.pvalue.PCollection:
    """Reads input_base/split_pattern (with metadata.csv and segments.csv) into tf.Examples."""
    input_base = exec_properties[standard_component_specs.INPUT_BASE_KEY]
    options = ingest_options(exec_properties)
    # With {SPAN} in the pattern the driver chose the newest spans to read (spans.py); TFX
    # filled split_pattern with the newest alone.
    patterns = [spans_lib.with_span(options["span_pattern"], int(span)) for span in options["spans"]] \
        if options.get("spans") else [split_pattern]
    matched = [pipeline | f"MatchFiles[{pattern}]" >> fileio.MatchFiles(
        os.path.join(input_base, pattern), empty_match_treatment=fileio.EmptyMatchTreatment.ALLOW)
        for pattern in patterns]
    files = (matched | "AllMatched" >> beam.Flatten()
             | "KeyBySource" >> beam.Map(lambda m: (_relative(m.path, input_base), True)))
    meta = pipeline | "Metadata" >> beam.Create(sorted(read_metadata(input_base, options["metadata_file"]).items()))
    spans = pipeline | "Spans" >> beam.Create(sorted(read_segments(input_base, options["segments_file"]).items()))
    outputs = (
        {"file": files, "meta": meta, "spans": spans}
        | "Join" >> beam.CoGroupByKey()
        | "Reshuffle" >> beam.Reshuffle()
        | "ToExamples" >> beam.ParDo(_ToExamples(input_base, options))
        .with_outputs(REJECTS_TAG, SECONDS_TAG, main="examples"))
    examples = outputs["examples"]
    copies = int(options["noisy_copies"])
    noisy = None
    if options["noise_base"] and copies > 0:
        noisy = examples | "AddNoisyCopies" >> beam.ParDo(noise_mix.AddNoisyCopies(
            options["noise_base"], copies, options["snr_db_range"], int(options["mix_seed"])))
    report_dir = exec_properties.get(REPORT_DIR_KEY)
    if report_dir:
        def write(name, pcoll, file_name, count=True):
            if count:
                pcoll = pcoll | f"Count{name}" >> beam.combiners.Count.Globally()
            _ = pcoll | f"Write{name}" >> beam.io.WriteToText(os.path.join(report_dir, file_name),
                                                              shard_name_template="")
        if noisy is not None:
            write("Noisy", noisy, AUGMENTED_FILE)
        write("Accepted", examples, ACCEPTED_FILE)
        write("Rejects", outputs[REJECTS_TAG] | "RejectsToJson" >> beam.Map(json.dumps, sort_keys=True),
              REJECTS_FILE, count=False)
        seconds = ((outputs[SECONDS_TAG], outputs[REJECTS_TAG]) | "AllSeconds" >> beam.Flatten()
                   | "SumSeconds" >> beam.CombineGlobally(_SumSeconds())
                   | "SecondsToJson" >> beam.Map(json.dumps, sort_keys=True))
        write("Seconds", seconds, SECONDS_FILE, count=False)
    return examples if noisy is None else (examples, noisy) | "WithNoisyCopies" >> beam.Flatten()


def split_sizes(examples_uri: str) -> Dict[str, Dict[str, int]]:
    """{split: {"examples": N, "bytes": B}} of an Examples artifact this ExampleGen wrote
    (B: serialized tf.Example bytes, before compression); {} for one written otherwise."""
    prefix, suffix = SPLIT_SIZE_FILE.split("{}")
    sizes = {}
    for path in FileSystems.match([os.path.join(examples_uri, "ingest_report", SPLIT_SIZE_FILE.format("*"))])[0] \
            .metadata_list:
        name = os.path.basename(path.path)[len(prefix):-len(suffix)]
        sizes[name] = json.loads(_read_text(path.path))
    return sizes


def _read_text(path: str) -> str:
    with FileSystems.open(path) as f:
        return f.read().decode()


def read_report(report_dir: str) -> Tuple[int, List[Dict[str, Any]]]:
    """Returns (examples written before noisy copies, reject records) of one ExampleGen run."""
    accepted = int(_read_text(os.path.join(report_dir, ACCEPTED_FILE)).strip() or 0)
    rejects_path = os.path.join(report_dir, REJECTS_FILE)
    rejects: List[Dict[str, Any]] = []
    if FileSystems.exists(rejects_path):
        rejects = [json.loads(line) for line in _read_text(rejects_path).splitlines() if line.strip()]
    return accepted, rejects


def read_seconds(report_dir: str) -> Dict[str, Any]:
    """The run's seconds accounting: seconds_in, seconds_in_examples, seconds_rejected,
    dropped {reason: seconds}, and rejected_of_unknown_length (files refused before their
    header was read: outside input_base, over the size limit, missing or unopenable)."""
    return json.loads(_read_text(os.path.join(report_dir, SECONDS_FILE)))


class Executor(BaseExampleGenExecutor):
    """BaseExampleGenExecutor whose input PTransform reads WAV files with Beam."""

    def GetInputSourceToExamplePTransform(self) -> beam.PTransform:
        return _WavToExample

    def _generate(self, input_dict, output_dict, exec_properties) -> None:
        """BaseExampleGenExecutor.Do without its write shuffle.

        TFX's `write_split.WriteSplit` puts a `Reshuffle` before the TFRecord write; on the
        DirectRunner that GroupByKey holds every example of the run in memory at once (an
        hour-long call: 1.5x the peak of a one-minute one, growing with the corpus). Here the
        examples stream from the reading DoFn into the files. The order stays random across
        recordings (the `Reshuffle` of file names before reading); the windows of one recording
        stay together, which the Trainer's shuffle buffer mixes. Payload: tf.Example, in
        `data_tfrecord-*` in each split's folder (`data.example_compression=gzip`:
        `data_tfrecord-*.gz`, as TFX's own ExampleGens write them; TFX's readers pick the
        compression by the name).
        """
        self._log_startup(input_dict, output_dict, exec_properties)
        input_config, output_config = example_gen_pb2.Input(), example_gen_pb2.Output()
        proto_utils.json_to_proto(exec_properties[standard_component_specs.INPUT_CONFIG_KEY], input_config)
        proto_utils.json_to_proto(exec_properties[standard_component_specs.OUTPUT_CONFIG_KEY], output_config)
        artifacts = output_dict[standard_component_specs.EXAMPLES_KEY]
        artifact_utils.get_single_instance(artifacts).split_names = artifact_utils.encode_split_names(
            example_gen_utils.generate_output_split_names(input_config, output_config))
        file_format = exec_properties.get(standard_component_specs.OUTPUT_FILE_FORMAT_KEY,
                                          example_gen_pb2.FILE_FORMAT_UNSPECIFIED)
        payload = exec_properties.get(standard_component_specs.OUTPUT_DATA_FORMAT_KEY)
        if payload not in (None, example_gen_pb2.PayloadFormat.FORMAT_TF_EXAMPLE):
            raise ValueError(f"WAV ExampleGen writes tf.Example only, not payload format {payload}")
        report_dir = exec_properties.get(REPORT_DIR_KEY)
        compression = ingest_options(exec_properties)["example_compression"]
        if compression not in EXAMPLE_COMPRESSIONS:
            raise ValueError(f"data.example_compression {compression!r}: expected one of {EXAMPLE_COMPRESSIONS}")
        suffix = ".gz" if compression == "gzip" else ""  # Beam's AUTO compression goes by the suffix
        with self._make_beam_pipeline() as pipeline:
            for name, split in self.GenerateExamplesByBeam(pipeline, exec_properties).items():
                serialized = split | f"Serialize[{name}]" >> beam.ParDo(write_split.MaybeSerialize())
                _ = serialized | f"Write[{name}]" >> beam.io.WriteToTFRecord(
                    os.path.join(artifact_utils.get_split_uri(artifacts, name),
                                 write_split.DEFAULT_FILE_NAME), file_name_suffix=suffix)
                if report_dir:  # the Trainer sizes its epochs and its cache from these, without a pass
                    _ = (serialized
                         | f"Size[{name}]" >> beam.Map(lambda record: (1, len(record)))
                         | f"SumSize[{name}]" >> beam.CombineGlobally(beam.combiners.TupleCombineFn(sum, sum))
                         | f"SizeToJson[{name}]" >> beam.Map(
                             lambda pair: json.dumps({"examples": pair[0], "bytes": pair[1]}))
                         | f"WriteSize[{name}]" >> beam.io.WriteToText(
                             os.path.join(report_dir, SPLIT_SIZE_FILE.format(name)), shard_name_template=""))
        for artifact in artifacts:  # as BaseExampleGenExecutor.Do records them
            if payload:
                examples_utils.set_payload_format(artifact, payload)
            if file_format:
                examples_utils.set_file_format(artifact, write_split.to_file_format_str(file_format))

    def Do(self, input_dict, output_dict, exec_properties):
        examples = artifact_utils.get_single_instance(
            output_dict[standard_component_specs.EXAMPLES_KEY])
        report_dir = os.path.join(examples.uri, "ingest_report")
        exec_properties = dict(exec_properties, **{REPORT_DIR_KEY: report_dir})
        self._generate(input_dict, output_dict, exec_properties)

        windows, rejects = read_report(report_dir)
        seconds = read_seconds(report_dir)
        noisy_path = os.path.join(report_dir, AUGMENTED_FILE)
        noisy = int(_read_text(noisy_path).strip() or 0) if FileSystems.exists(noisy_path) else 0
        total = seconds["accepted_files"] + len(rejects)
        examples.set_int_custom_property("num_input_files", total)
        examples.set_int_custom_property("num_noisy_copies", noisy)
        examples.set_int_custom_property("num_examples", windows + noisy)
        examples.set_int_custom_property("num_rejected", len(rejects))
        for key in ("seconds_in", "seconds_in_examples", "seconds_rejected"):
            examples.set_float_custom_property(key, round(seconds[key], 3))
        examples.set_float_custom_property("seconds_dropped", round(sum(seconds["dropped"].values()), 3))
        examples.set_int_custom_property("rejected_of_unknown_length", seconds["rejected_of_unknown_length"])
        examples.set_string_custom_property("seconds_dropped_by_reason", json.dumps(seconds["dropped"]))
        examples.set_string_custom_property("rejects_file", os.path.join(report_dir, REJECTS_FILE))
        examples.set_string_custom_property("split_sizes", json.dumps(split_sizes(examples.uri), sort_keys=True))
        logging.info("WAV ExampleGen: %d files in, %d examples (%d noisy copies), %d rejected; seconds %s",
                     total, windows + noisy, noisy, len(rejects), seconds)
        input_base = exec_properties[standard_component_specs.INPUT_BASE_KEY]
        if windows == 0:
            raise ValueError(f"WAV ExampleGen: no usable audio under {input_base} "
                             f"({len(rejects)} rejected, see {report_dir}/{REJECTS_FILE})")
        limit = float(ingest_options(exec_properties)["max_reject_fraction"])
        if len(rejects) > limit * total:
            shown = "; ".join(f"{r['source']}: {r['reason']}" for r in rejects[:5])
            raise ValueError(
                f"WAV ExampleGen: {len(rejects)} of {total} files under {input_base} rejected, "
                f"over data.max_reject_fraction={limit}. First: {shown}. "
                f"All reasons: {report_dir}/{REJECTS_FILE}")
