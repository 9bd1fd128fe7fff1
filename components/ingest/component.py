"""The WAV ExampleGen component: TFX's FileBasedExampleGen with a Beam WAV executor.

FileBasedExampleGen brings the file-fingerprinting driver (span, version, cache
key; ours adds metadata.csv and segments.csv to the fingerprint) and the
split/partition machinery; `BeamExecutorSpec` makes the pipeline's
`beam_pipeline_args` reach the executor, so DirectRunner, Dataflow, Flink or
Spark is chosen by Beam's own flags.
"""
import hashlib
import os
import re
from typing import Any, Optional, Tuple

from google.protobuf import json_format, struct_pb2
from tfx import v1 as tfx
from tfx.components.example_gen import driver, input_processor
from tfx.components.example_gen import utils as example_gen_utils
from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec
from tfx.dsl.io import fileio
from tfx.types import standard_component_specs
from tfx.utils import proto_utils

from components.config import INGEST_OPTIONS, DataConfig
from components.ingest import executor, listing, spans


class _InputProcessor(input_processor.FileBasedInputProcessor):
    """TFX's file-based input processor (newest span and version, input fingerprint) over
    `listing.entries`: TFX's own globs and stats every matched file with TensorFlow's gfile,
    which raises on one entry it cannot read (a dangling link: NotFoundError with no message;
    a link loop; a name that is not UTF-8), failing the run before any file is read."""

    def resolve_span_and_version(self) -> Tuple[int, Optional[int]]:
        fingerprints, resolved = [], None
        for split in self._splits:
            found = _span_and_version(self._input_base_uri, split, self._range_config)
            if resolved not in (None, found):
                raise ValueError(f"WAV ExampleGen: split {split.name} has span and version {found}, "
                                 f"another {resolved}: they must be the same for each split")
            resolved = found
            pattern = self.get_pattern_for_span_version(split.pattern, *found)  # as the executor gets it
            fingerprints.append(listing.fingerprint(split.name, os.path.join(self._input_base_uri, pattern)))
        self._fingerprint = "\n".join(fingerprints)
        return resolved


def _span_and_version(input_base: str, split, range_config) -> Tuple[int, Optional[int]]:
    """TFX's `_get_target_span_version` over `listing.entries`: the newest span (0 without
    {SPAN} or a date in the pattern) and its newest version (None without {VERSION})."""
    is_span, is_date, is_version = example_gen_utils.verify_split_pattern_specs(split)
    if not is_span and not is_date:
        return 0, None
    glob, regex = example_gen_utils._create_matching_glob_and_regex(  # pylint: disable=protected-access
        input_base, split, is_span, is_date, is_version, range_config)
    found = [example_gen_utils._find_matched_span_version_from_path(  # pylint: disable=protected-access
        path, regex, is_span, is_date, is_version)[1::2]
        for path in listing.entries(glob) if re.search(regex, path)]  # (Beam's `**` crosses folders)
    if not found:
        raise ValueError(f"Cannot find matching for split {split.name} based on {split.pattern}")
    return max(found, key=lambda sv: (sv[0], -1 if sv[1] is None else sv[1]))


class Driver(driver.FileBasedDriver):
    """TFX's file-based driver, whose input fingerprint (the cache key of the ExampleGen's
    run) also covers the executor's output version and metadata.csv and segments.csv: TFX fingerprints only the files of
    the split pattern, so an edited label would otherwise reuse a cached, stale run. Its
    listing and fingerprint take any entry the pattern matches (`_InputProcessor`)."""

    def get_input_processor(self, splits, range_config=None, input_base_uri=None):
        return _InputProcessor(input_base_uri, splits, range_config)

    def resolve_exec_properties(self, exec_properties, pipeline_info, component_info):
        splits = _splits(exec_properties)  # before TFX fills their {SPAN} with the newest span
        pattern = splits[0].pattern
        exec_properties = super().resolve_exec_properties(exec_properties, pipeline_info, component_info)
        input_base = exec_properties[standard_component_specs.INPUT_BASE_KEY]
        options = executor.ingest_options(exec_properties)
        lines = [exec_properties[example_gen_utils.FINGERPRINT_PROPERTY_NAME],
                 f"executor output version: {executor.OUTPUT_VERSION}"]  # a fix's output is not the cache's
        if spans.span_depth(pattern) is not None:  # the newest N spans: read and fingerprinted
            newest = spans.newest(input_base, pattern, int(options["latest_spans"]),
                                  int(exec_properties[example_gen_utils.SPAN_PROPERTY_NAME]))
            for span in newest[:-1]:  # TFX fingerprinted the newest; the others as TFX would, one by one
                processor = self.get_input_processor(
                    splits=splits, input_base_uri=input_base, range_config=tfx.proto.RangeConfig(
                        static_range=tfx.proto.StaticRange(start_span_number=span, end_span_number=span)))
                processor.resolve_span_and_version()
                lines.append(f"span {span}: {processor.get_input_fingerprint(span, None)}")
            exec_properties[standard_component_specs.CUSTOM_CONFIG_KEY] = _with_options(
                exec_properties[standard_component_specs.CUSTOM_CONFIG_KEY], span_pattern=pattern, spans=newest)
        for key in ("metadata_file", "segments_file"):
            path = os.path.join(input_base, options[key])
            digest = "absent"  # ("" turns the file off, as the executor reads it)
            refused = options[key] and "://" not in path and os.path.lexists(path) and listing.problem(path)
            if refused:  # (a FIFO is never opened: the executor refuses the run naming the table)
                digest = f"not read, {refused}"
            elif options[key] and fileio.exists(path):  # small text files: their content, not their mtime
                with fileio.open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            lines.append(f"{options[key]}: sha256 {digest}")
        exec_properties[example_gen_utils.FINGERPRINT_PROPERTY_NAME] = "\n".join(lines)
        return exec_properties


def _splits(exec_properties):
    input_config = tfx.proto.Input()
    proto_utils.json_to_proto(exec_properties[standard_component_specs.INPUT_CONFIG_KEY], input_config)
    return input_config.splits


def _pack(options) -> tfx.proto.CustomConfig:
    packed = struct_pb2.Struct()
    packed.update({k: list(v) if isinstance(v, (list, tuple)) else v for k, v in options.items()})
    custom_config = tfx.proto.CustomConfig()
    custom_config.custom_config.Pack(packed)
    return custom_config


def _with_options(custom_config_json: str, **added) -> str:
    """The component's custom_config (its options) with `added` set, as JSON."""
    custom_config = tfx.proto.CustomConfig()
    proto_utils.json_to_proto(custom_config_json, custom_config)
    packed = struct_pb2.Struct()
    custom_config.custom_config.Unpack(packed)
    return proto_utils.proto_to_json(_pack({**json_format.MessageToDict(packed), **added}))


class WavExampleGen(FileBasedExampleGen):
    """Reads `input_base/<file_pattern>` (+ metadata.csv, segments.csv) into split tf.Examples.

    `options` are fields of `components.config.DataConfig` (`INGEST_OPTIONS`); the
    ones not given keep DataConfig's defaults."""

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)
    DRIVER_CLASS = Driver

    def __init__(self, input_base: str, file_pattern: str = DataConfig.file_pattern,
                 output_config: Optional[tfx.proto.Output] = None, **options: Any):
        unknown = sorted(set(options) - set(INGEST_OPTIONS))
        if unknown:
            raise TypeError(f"WavExampleGen: unknown option(s) {unknown}; known: {list(INGEST_OPTIONS)}")
        custom_config = _pack(options)
        super().__init__(
            input_base=input_base,
            input_config=tfx.proto.Input(splits=[
                tfx.proto.Input.Split(name="all", pattern=file_pattern)]),
            output_config=output_config,
            custom_config=custom_config)
