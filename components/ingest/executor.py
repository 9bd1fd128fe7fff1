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

import json
import os
from typing import Any, Dict

import apache_beam as beam
import tensorflow as tf
from absl import logging
from apache_beam.io.filesystems import FileSystems
from google.protobuf import json_format, struct_pb2
from tfx.components.example_gen import utils as example_gen_utils
from tfx.components.example_gen import write_split
from tfx.components.example_gen.base_example_gen_executor import BaseExampleGenExecutor
from tfx.components.util import examples_utils
from tfx.proto import example_gen_pb2
from tfx.types import artifact_utils, standard_component_specs
from tfx.utils import proto_utils

from components import beam_fixes
from components.config import INGEST_OPTIONS, DataConfig, FeatureConfig
from components.ingest import listing, noise_mix, report, tables
from components.ingest import spans as spans_lib
from components.ingest.windows import ToExamples

beam_fixes.apply()  # this executor runs its own Beam pipeline, wherever TFX runs it

# Part of the ExampleGen's cache key (the driver's input fingerprint). Raise it when a fix changes what this
# executor writes for the same input and settings, so that a cached output of the old code is not reused.
# 2: every example made is written (the Beam fix, `beam_fixes`); version 1's outputs could lack about 10 %.
OUTPUT_VERSION = 2


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
    metadata = tables.read_metadata(input_base, options["metadata_file"])
    segments = tables.read_segments(input_base, options["segments_file"])
    # Every entry matched, those that cannot be read too, one identity per file (listing.py): each
    # ends as examples or a reject.
    table_names = sorted(set(metadata) | set(segments))
    files = (pipeline | "Patterns" >> beam.Create([[os.path.join(input_base, pattern) for pattern in patterns]])
             | "ListEntries" >> beam.FlatMap(  # keyed at once: Beam carries only UTF-8 names between steps
                 lambda globs: listing.listed(globs, input_base, table_names)))
    meta = pipeline | "Metadata" >> beam.Create(sorted(metadata.items()))
    spans = pipeline | "Spans" >> beam.Create(sorted(segments.items()))
    outputs = (
        {"file": files, "meta": meta, "spans": spans}
        | "Join" >> beam.CoGroupByKey()
        | "Reshuffle" >> beam.Reshuffle()
        | "ToExamples" >> beam.ParDo(ToExamples(input_base, options))
        .with_outputs(report.REJECTS_TAG, report.SECONDS_TAG, main="examples"))
    examples = outputs["examples"]
    copies = int(options["noisy_copies"])
    noisy = None
    if options["noise_base"] and copies > 0:
        noisy = examples | "AddNoisyCopies" >> beam.ParDo(noise_mix.AddNoisyCopies(
            options["noise_base"], copies, options["snr_db_range"], int(options["mix_seed"])))
    report_dir = exec_properties.get(report.REPORT_DIR_KEY)
    if report_dir:
        def write(name, pcoll, file_name, count=True):
            if count:
                pcoll = pcoll | f"Count{name}" >> beam.combiners.Count.Globally()
            _ = pcoll | f"Write{name}" >> beam.io.WriteToText(os.path.join(report_dir, file_name),
                                                              shard_name_template="")
        if noisy is not None:
            write("Noisy", noisy, report.AUGMENTED_FILE)
        write("Accepted", examples, report.ACCEPTED_FILE)
        write("Rejects", outputs[report.REJECTS_TAG] | "RejectsToJson" >> beam.Map(json.dumps, sort_keys=True),
              report.REJECTS_FILE, count=False)
        seconds = ((outputs[report.SECONDS_TAG], outputs[report.REJECTS_TAG]) | "AllSeconds" >> beam.Flatten()
                   | "SumSeconds" >> beam.CombineGlobally(report.SumSeconds())
                   | "SecondsToJson" >> beam.Map(json.dumps, sort_keys=True))
        write("Seconds", seconds, report.SECONDS_FILE, count=False)
    return examples if noisy is None else (examples, noisy) | "WithNoisyCopies" >> beam.Flatten()


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
        report_dir = exec_properties.get(report.REPORT_DIR_KEY)
        compression = ingest_options(exec_properties)["example_compression"]
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
                             os.path.join(report_dir, report.SPLIT_SIZE_FILE.format(name)), shard_name_template=""))
        for artifact in artifacts:  # as BaseExampleGenExecutor.Do records them
            if payload:
                examples_utils.set_payload_format(artifact, payload)
            if file_format:
                examples_utils.set_file_format(artifact, write_split.to_file_format_str(file_format))

    def Do(self, input_dict, output_dict, exec_properties):
        examples = artifact_utils.get_single_instance(
            output_dict[standard_component_specs.EXAMPLES_KEY])
        report_dir = os.path.join(examples.uri, report.REPORT_DIR)
        exec_properties = dict(exec_properties, **{report.REPORT_DIR_KEY: report_dir})
        self._generate(input_dict, output_dict, exec_properties)

        windows, rejects = report.read_report(report_dir)
        seconds = report.read_seconds(report_dir)
        noisy_path = os.path.join(report_dir, report.AUGMENTED_FILE)
        noisy = int(report.read_text(noisy_path).strip() or 0) if FileSystems.exists(noisy_path) else 0
        total = seconds["accepted_files"] + len(rejects)
        examples.set_int_custom_property("num_input_files", total)
        examples.set_int_custom_property("num_noisy_copies", noisy)
        examples.set_int_custom_property("num_examples", windows + noisy)
        examples.set_int_custom_property("num_rejected", len(rejects))
        examples.set_int_custom_property("num_tracks", seconds.get("accepted_tracks", seconds["accepted_files"]))
        for key in ("seconds_in", "seconds_in_examples", "seconds_rejected"):
            examples.set_float_custom_property(key, round(seconds[key], 3))
        examples.set_float_custom_property("seconds_dropped", round(sum(seconds["dropped"].values()), 3))
        examples.set_int_custom_property("rejected_of_unknown_length", seconds["rejected_of_unknown_length"])
        examples.set_string_custom_property("seconds_dropped_by_reason", json.dumps(seconds["dropped"]))
        examples.set_string_custom_property("rejects_file", os.path.join(report_dir, report.REJECTS_FILE))
        sizes = report.split_sizes(examples.uri)
        examples.set_string_custom_property("split_sizes", json.dumps(sizes, sort_keys=True))
        report.check_written(windows + noisy, sizes, examples.uri)
        logging.info("WAV ExampleGen: %d files in, %d examples (%d noisy copies), %d rejected; seconds %s",
                     total, windows + noisy, noisy, len(rejects), seconds)
        input_base = exec_properties[standard_component_specs.INPUT_BASE_KEY]
        if windows == 0:
            raise ValueError(f"WAV ExampleGen: no usable audio under {input_base} "
                             f"({len(rejects)} rejected, see {report_dir}/{report.REJECTS_FILE})")
        limit = float(ingest_options(exec_properties)["max_reject_fraction"])
        if len(rejects) > limit * total:
            shown = "; ".join(f"{r['source']}: {r['reason']}" for r in rejects[:5])
            raise ValueError(
                f"WAV ExampleGen: {len(rejects)} of {total} files under {input_base} rejected, "
                f"over data.max_reject_fraction={limit}. First: {shown}. "
                f"All reasons: {report_dir}/{report.REJECTS_FILE}")
