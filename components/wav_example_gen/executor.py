"""WAV ExampleGen executor: reads audio files with Beam and writes tf.Examples.

Input: `input_base/<label>/*.wav` (the split pattern), plus an optional
audiofolder-style `metadata.csv` (`file_name,label[,group,clean_file_name,
noise_kind,snr_db]`). With `layout=paired` (VoiceBank-DEMAND style), files under
`noisy/` take `clean/` + the same relative path as their clean reference, and
a label folder, if any, comes after `noisy/`. Where a clean reference exists and
no `snr_db` is given, the input SNR is measured. Every file ends up either as an
example or as a line in `<examples uri>/ingest_report/rejects.jsonl` with its reason.
"""
from __future__ import annotations

import csv
import io
import json
import os
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

import apache_beam as beam
import numpy as np
import tensorflow as tf
from absl import logging
from apache_beam.io import fileio
from apache_beam.io.filesystems import FileSystems
from tfx.components.example_gen.base_example_gen_executor import BaseExampleGenExecutor
from google.protobuf import json_format, struct_pb2
from tfx.proto import example_gen_pb2
from tfx.types import artifact_utils, standard_component_specs
from tfx.utils import proto_utils

from components import audio_io, features, snr_metrics
from components.wav_example_gen import noise_mix
from pipeline.config import DataConfig

REPORT_DIR_KEY = "_tfx_audio_report_dir"
REJECTS_FILE = "rejects.jsonl"
ACCEPTED_FILE = "accepted_count.txt"
AUGMENTED_FILE = "noisy_copies_count.txt"
REJECTS_TAG = "rejects"
LAYOUTS = ("folders", "paired")
NOISY_DIR, CLEAN_DIR = "noisy/", "clean/"  # the paired layout's folders
# The component's options: fields of pipeline.config.DataConfig, defaults included.
OPTION_NAMES = ("metadata_file", "max_duration_s", "max_reject_fraction", "layout", "noise_base",
                "noisy_copies", "snr_db_range", "mix_seed")
_METADATA_COLUMNS = ("file_name", "label", "group", "clean_file_name", "noise_kind", "snr_db")


def _options(exec_properties: Dict[str, Any]) -> Dict[str, Any]:
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
    return {**{name: getattr(defaults, name) for name in OPTION_NAMES}, **options}


def read_metadata(input_base: str, metadata_file: str) -> Dict[str, Dict[str, str]]:
    """Reads metadata.csv into {file_name: row}; a missing file means no metadata."""
    path = os.path.join(input_base, metadata_file)
    if not metadata_file or not FileSystems.exists(path):
        return {}
    with FileSystems.open(path) as f:
        text = f.read().decode("utf-8-sig")
    reader = csv.DictReader(io.StringIO(text))
    missing = {"file_name", "label"} - set(reader.fieldnames or [])
    if missing:
        raise ValueError(f"{path}: header lacks required column(s) {sorted(missing)}; "
                         f"expected file_name,label and optionally group,clean_file_name,"
                         f"noise_kind,snr_db")
    rows: Dict[str, Dict[str, str]] = {}
    for line_no, row in enumerate(reader, start=2):
        name = (row.get("file_name") or "").strip()
        if not name:
            raise ValueError(f"{path}:{line_no}: empty file_name")
        if name in rows:
            raise ValueError(f"{path}:{line_no}: {name} is listed twice")
        rows[name] = {k: (row.get(k) or "").strip() for k in _METADATA_COLUMNS}
    return rows


def _relative(path: str, input_base: str) -> str:
    base = input_base.rstrip("/") + "/"
    return path[len(base):] if path.startswith(base) else path


def _bytes_feature(value: bytes) -> tf.train.Feature:
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def _float_feature(value: float) -> tf.train.Feature:
    return tf.train.Feature(float_list=tf.train.FloatList(value=[value]))


def _input_snr(given: str, clean: Optional[np.ndarray], noisy: np.ndarray) -> Optional[float]:
    """The input SNR: metadata's `snr_db` when given, else measured against the clean
    reference; None without either (or when undefined: silent or identical)."""
    if given:
        try:
            return float(given)
        except ValueError as e:
            raise audio_io.AudioError(f"snr_db {given!r} is not a number") from e
    if clean is None:
        return None
    n = min(len(clean), len(noisy))
    measured = snr_metrics.snr_db(clean[:n], noisy[:n])
    return None if measured is None else round(measured, 2)


class _ToExample(beam.DoFn):
    """Turns one (source, metadata) pair into a tf.Example or a reject record."""

    def __init__(self, input_base: str, max_duration_s: float, layout: str = "folders"):
        if layout not in LAYOUTS:
            raise ValueError(f"data.layout {layout!r}: expected one of {LAYOUTS}")
        self._input_base = input_base
        self._max_duration_s = max_duration_s
        self._paired = layout == "paired"
        self._rejected = beam.metrics.Metrics.counter("wav_example_gen", "rejected")
        self._accepted = beam.metrics.Metrics.counter("wav_example_gen", "accepted")

    def _read(self, source: str) -> bytes:
        path = os.path.join(self._input_base, source)
        try:
            with FileSystems.open(path) as f:
                return f.read()
        except (IOError, OSError, beam.io.filesystem.BeamIOError) as e:
            raise audio_io.AudioError(f"cannot read file ({e})") from e

    def _example(self, source: str, in_glob: bool, meta: Optional[Dict[str, str]]) -> tf.train.Example:
        if not in_glob and meta is not None and not FileSystems.exists(
                os.path.join(self._input_base, source)):
            raise audio_io.AudioError("listed in metadata.csv but the file does not exist")
        meta = meta or {}
        audio = audio_io.decode_to_mono_16k(self._read(source))
        duration = len(audio) / features.SAMPLE_RATE
        if duration > self._max_duration_s:
            raise audio_io.AudioError(
                f"{duration:.1f} s long, over the {self._max_duration_s} s limit (data.max_duration_s)")
        clean_name = meta.get("clean_file_name", "")
        folders = source
        if self._paired:
            if not source.startswith(NOISY_DIR):
                raise audio_io.AudioError(f"data.layout=paired reads files under {NOISY_DIR} only")
            folders = source[len(NOISY_DIR):]
            clean_name = clean_name or CLEAN_DIR + folders
            if not FileSystems.exists(os.path.join(self._input_base, clean_name)):
                raise audio_io.AudioError(f"paired layout: no clean reference {clean_name}")
        label = meta.get("label") or (folders.split("/")[0] if "/" in folders else "")
        if not label:
            where = f"{NOISY_DIR}<label>/" if self._paired else "<label>/"
            raise audio_io.AudioError(f"no label: put the file in a {where} folder or list it in metadata.csv")
        group = meta.get("group") or clean_name or source
        feats = {
            features.AUDIO: _bytes_feature(audio_io.encode_pcm16_wav(audio)),
            features.LABEL: _bytes_feature(label.encode()),
            features.GROUP: _bytes_feature(group.encode()),
            features.SOURCE: _bytes_feature(source.encode()),
            features.DURATION_S: _float_feature(duration),
        }
        clean = None
        if clean_name:
            try:
                clean = audio_io.decode_to_mono_16k(self._read(clean_name))
            except audio_io.AudioError as e:
                raise audio_io.AudioError(f"clean reference {clean_name}: {e}") from e
            if abs(len(clean) - len(audio)) > 0.01 * len(audio) + 16:
                raise audio_io.AudioError(
                    f"clean reference {clean_name} is {len(clean)} samples, noisy file {len(audio)}")
            feats[features.CLEAN_AUDIO] = _bytes_feature(audio_io.encode_pcm16_wav(clean))
        if meta.get("noise_kind"):
            feats[features.NOISE_KIND] = _bytes_feature(meta["noise_kind"].encode())
        snr = _input_snr(meta.get("snr_db", ""), clean, audio)
        if snr is not None:
            feats[features.SNR_DB] = _float_feature(snr)
        return tf.train.Example(features=tf.train.Features(feature=feats))

    def process(self, keyed: Tuple[str, Dict[str, List[Any]]]) -> Iterable[Union[tf.train.Example, Any]]:
        source, grouped = keyed
        metas = grouped["meta"]
        try:
            example = self._example(source, bool(grouped["file"]), metas[0] if metas else None)
        except audio_io.AudioError as e:
            self._rejected.inc()
            logging.warning("WAV ExampleGen rejects %s: %s", source, e)
            yield beam.pvalue.TaggedOutput(REJECTS_TAG, {"source": source, "reason": str(e)})
            return
        self._accepted.inc()
        yield example


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(tf.train.Example)
def _WavToExample(pipeline: beam.Pipeline, exec_properties: Dict[str, Any],
                  split_pattern: str) -> beam.pvalue.PCollection:
    """Reads input_base/split_pattern (and metadata.csv) into tf.Examples."""
    input_base = exec_properties[standard_component_specs.INPUT_BASE_KEY]
    options = _options(exec_properties)
    metadata = read_metadata(input_base, options["metadata_file"])
    files = (
        pipeline
        | "MatchFiles" >> fileio.MatchFiles(os.path.join(input_base, split_pattern),
                                            empty_match_treatment=fileio.EmptyMatchTreatment.ALLOW)
        | "KeyBySource" >> beam.Map(lambda m: (_relative(m.path, input_base), True)))
    meta = pipeline | "Metadata" >> beam.Create(sorted(metadata.items()))
    outputs = (
        {"file": files, "meta": meta}
        | "JoinMetadata" >> beam.CoGroupByKey()
        | "Reshuffle" >> beam.Reshuffle()
        | "ToExample" >> beam.ParDo(_ToExample(input_base, float(options["max_duration_s"]), options["layout"]))
        .with_outputs(REJECTS_TAG, main="examples"))
    examples = outputs["examples"]
    copies = int(options["noisy_copies"])
    noisy = None
    if options["noise_base"] and copies > 0:
        noisy = examples | "AddNoisyCopies" >> beam.ParDo(noise_mix.AddNoisyCopies(
            options["noise_base"], copies, options["snr_db_range"], int(options["mix_seed"])))
    report_dir = exec_properties.get(REPORT_DIR_KEY)
    if report_dir and noisy is not None:
        _ = (noisy
             | "CountNoisy" >> beam.combiners.Count.Globally()
             | "WriteNoisy" >> beam.io.WriteToText(os.path.join(report_dir, AUGMENTED_FILE),
                                                   shard_name_template=""))
    if report_dir:
        _ = (outputs[REJECTS_TAG]
             | "RejectsToJson" >> beam.Map(lambda r: json.dumps(r, sort_keys=True))
             | "WriteRejects" >> beam.io.WriteToText(os.path.join(report_dir, REJECTS_FILE),
                                                     shard_name_template=""))
        _ = (outputs["examples"]
             | "CountAccepted" >> beam.combiners.Count.Globally()
             | "WriteAccepted" >> beam.io.WriteToText(os.path.join(report_dir, ACCEPTED_FILE),
                                                      shard_name_template=""))
    return examples if noisy is None else (examples, noisy) | "WithNoisyCopies" >> beam.Flatten()


def _read_count(path: str) -> int:
    """A count written by Count.Globally | WriteToText."""
    with FileSystems.open(path) as f:
        return int(f.read().decode().strip() or 0)


def read_report(report_dir: str) -> Tuple[int, List[Dict[str, str]]]:
    """Returns (accepted count, reject records) written by one ExampleGen run."""
    accepted = _read_count(os.path.join(report_dir, ACCEPTED_FILE))
    rejects_path = os.path.join(report_dir, REJECTS_FILE)
    rejects: List[Dict[str, str]] = []
    if FileSystems.exists(rejects_path):
        with FileSystems.open(rejects_path) as f:
            rejects = [json.loads(line) for line in f.read().decode().splitlines() if line.strip()]
    return accepted, rejects


class Executor(BaseExampleGenExecutor):
    """BaseExampleGenExecutor whose input PTransform reads WAV files with Beam."""

    def GetInputSourceToExamplePTransform(self) -> beam.PTransform:
        return _WavToExample

    def Do(self, input_dict, output_dict, exec_properties):
        examples = artifact_utils.get_single_instance(
            output_dict[standard_component_specs.EXAMPLES_KEY])
        report_dir = os.path.join(examples.uri, "ingest_report")
        exec_properties = dict(exec_properties, **{REPORT_DIR_KEY: report_dir})
        super().Do(input_dict, output_dict, exec_properties)

        accepted, rejects = read_report(report_dir)
        total = accepted + len(rejects)
        noisy_path = os.path.join(report_dir, AUGMENTED_FILE)
        noisy = _read_count(noisy_path) if FileSystems.exists(noisy_path) else 0  # only with noise_base
        examples.set_int_custom_property("num_input_files", total)
        examples.set_int_custom_property("num_noisy_copies", noisy)
        examples.set_int_custom_property("num_examples", accepted + noisy)
        examples.set_int_custom_property("num_rejected", len(rejects))
        examples.set_string_custom_property("rejects_file", os.path.join(report_dir, REJECTS_FILE))
        logging.info("WAV ExampleGen: %d files in, %d examples (%d noisy copies), %d rejected",
                     total, accepted + noisy, noisy, len(rejects))
        input_base = exec_properties[standard_component_specs.INPUT_BASE_KEY]
        if accepted == 0:
            raise ValueError(f"WAV ExampleGen: no usable audio under {input_base} "
                             f"({len(rejects)} rejected, see {report_dir}/{REJECTS_FILE})")
        limit = float(_options(exec_properties)["max_reject_fraction"])
        if len(rejects) > limit * total:
            shown = "; ".join(f"{r['source']}: {r['reason']}" for r in rejects[:5])
            raise ValueError(
                f"WAV ExampleGen: {len(rejects)} of {total} files under {input_base} rejected, "
                f"over data.max_reject_fraction={limit}. First: {shown}. "
                f"All reasons: {report_dir}/{REJECTS_FILE}")
