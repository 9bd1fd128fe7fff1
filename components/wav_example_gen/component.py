"""The WAV ExampleGen component: TFX's FileBasedExampleGen with a Beam WAV executor.

FileBasedExampleGen brings the file-fingerprinting driver (span, version, cache
key) and the split/partition machinery; `BeamExecutorSpec` makes the pipeline's
`beam_pipeline_args` reach the executor, so DirectRunner, Dataflow, Flink or
Spark is chosen by Beam's own flags.
"""
from typing import Any, Optional

from google.protobuf import struct_pb2
from tfx import v1 as tfx
from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec

from components.config import INGEST_OPTIONS, DataConfig
from components.wav_example_gen import executor


class WavExampleGen(FileBasedExampleGen):
    """Reads `input_base/<file_pattern>` (+ metadata.csv, segments.csv) into split tf.Examples.

    `options` are fields of `components.config.DataConfig` (`INGEST_OPTIONS`); the
    ones not given keep DataConfig's defaults."""

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

    def __init__(self, input_base: str, file_pattern: str = DataConfig.file_pattern,
                 output_config: Optional[tfx.proto.Output] = None, **options: Any):
        unknown = sorted(set(options) - set(INGEST_OPTIONS))
        if unknown:
            raise TypeError(f"WavExampleGen: unknown option(s) {unknown}; known: {list(INGEST_OPTIONS)}")
        packed = struct_pb2.Struct()
        packed.update({k: list(v) if isinstance(v, (list, tuple)) else v for k, v in options.items()})
        custom_config = tfx.proto.CustomConfig()
        custom_config.custom_config.Pack(packed)
        super().__init__(
            input_base=input_base,
            input_config=tfx.proto.Input(splits=[
                tfx.proto.Input.Split(name="all", pattern=file_pattern)]),
            output_config=output_config,
            custom_config=custom_config)
