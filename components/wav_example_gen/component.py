"""The WAV ExampleGen component: TFX's FileBasedExampleGen with a Beam WAV executor.

FileBasedExampleGen brings the file-fingerprinting driver (span, version, cache
key) and the split/partition machinery; `BeamExecutorSpec` makes the pipeline's
`beam_pipeline_args` reach the executor, so DirectRunner, Dataflow, Flink or
Spark is chosen by Beam's own flags.
"""
from typing import Optional, Sequence

from google.protobuf import struct_pb2
from tfx import v1 as tfx
from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec

from components.wav_example_gen import executor
from pipeline.config import DataConfig

_DEFAULTS = DataConfig()  # the defaults are DataConfig's


class WavExampleGen(FileBasedExampleGen):
    """Reads `input_base/<file_pattern>` (+ metadata.csv) into split tf.Examples."""

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

    def __init__(self, input_base: str, file_pattern: str = _DEFAULTS.file_pattern,
                 output_config: Optional[tfx.proto.Output] = None,
                 metadata_file: str = _DEFAULTS.metadata_file, max_duration_s: float = _DEFAULTS.max_duration_s,
                 max_reject_fraction: float = _DEFAULTS.max_reject_fraction, layout: str = _DEFAULTS.layout,
                 noise_base: str = _DEFAULTS.noise_base, noisy_copies: int = _DEFAULTS.noisy_copies,
                 snr_db_range: Sequence[float] = tuple(_DEFAULTS.snr_db_range), mix_seed: int = _DEFAULTS.mix_seed):
        options = struct_pb2.Struct()
        options.update({"metadata_file": metadata_file, "max_duration_s": max_duration_s,
                        "max_reject_fraction": max_reject_fraction, "layout": layout,
                        "noise_base": noise_base,
                        "noisy_copies": noisy_copies, "snr_db_range": list(snr_db_range),
                        "mix_seed": mix_seed})
        custom_config = tfx.proto.CustomConfig()
        custom_config.custom_config.Pack(options)
        super().__init__(
            input_base=input_base,
            input_config=tfx.proto.Input(splits=[
                tfx.proto.Input.Split(name="all", pattern=file_pattern)]),
            output_config=output_config,
            custom_config=custom_config)
