"""The schema's bounds that mirror settings, and the gate on ExampleValidator's anomalies.

`schemas/schema.pbtxt` is the curated schema (types, presence, fixed bounds). The
bounds that a setting decides (a window's longest duration, the audio-statistics
limits of `validation.*`) are not written twice: `ConfiguredSchema` takes the
schema ImportSchemaGen imported and sets those domains from the config, and
ExampleValidator, Transform and Trainer use its output. `AnomaliesGate` runs
between ExampleValidator and Transform: with `validation.on_anomalies: fail` a
split with anomalies stops the run there, naming them; with `warn` it logs them and
the run summary lists them.
"""

import json
import os
from typing import Dict, List, Optional, Tuple

import tensorflow as tf
import tensorflow_data_validation as tfdv
from absl import logging
from tensorflow_data_validation.utils import anomalies_util
from tensorflow_metadata.proto.v0 import schema_pb2
from tfx import v1 as tfx
from tfx.components.example_validator.executor import DEFAULT_FILE_NAME as _ANOMALIES_FILE
from tfx.types import artifact_utils
from tfx.utils import io_utils

from components import features
from components.config import PipelineConfig

SCHEMA_FILE = "schema.pbtxt"
Bounds = Dict[str, Tuple[Optional[float], Optional[float]]]


def bounds(config: PipelineConfig) -> Bounds:
    """{feature: (min, max)} that the settings decide; None leaves a side open."""
    v = config.validation
    return {
        features.DURATION_S: (0.0, config.segment_s + 1e-3),  # a window is at most data.segment_s
        features.CLIPPING_RATIO: (0.0, v.max_clipping_ratio),
        features.RMS_DBFS: (v.min_rms_dbfs, 0.0),
        features.DC_OFFSET: (-v.max_dc_offset, v.max_dc_offset),
        features.SILENCE_FRACTION: (0.0, v.max_silence_fraction),
        features.SOURCE_SAMPLE_RATE: (v.min_sample_rate, None),
        features.SOURCE_CHANNELS: (1, v.max_channels),
    }


def apply_bounds(schema: schema_pb2.Schema, limits: Bounds) -> schema_pb2.Schema:
    """A copy of `schema` with each listed feature's domain set to its (min, max)."""
    out = schema_pb2.Schema()
    out.CopyFrom(schema)
    for name, (low, high) in limits.items():
        feature = tfdv.get_feature(out, name)  # raises naming the feature when the schema lacks it
        if feature.type == schema_pb2.INT:
            domain = schema_pb2.IntDomain(min=None if low is None else int(low),
                                          max=None if high is None else int(high))
            feature.int_domain.CopyFrom(domain)
        elif feature.type == schema_pb2.FLOAT:
            feature.float_domain.CopyFrom(schema_pb2.FloatDomain(min=low, max=high))
        else:
            raise ValueError(f"schema feature {name} is not numeric: cannot bound it")
    return out


def read_anomalies(uri: str, split_names: List[str]) -> Dict[str, List[str]]:
    """{split: ["feature: description", ...]} of an ExampleAnomalies artifact; splits
    without anomalies are left out."""
    found: Dict[str, List[str]] = {}
    for split in split_names:
        path = os.path.join(uri, f"Split-{split}", _ANOMALIES_FILE)  # TFX's split folder naming
        if not tf.io.gfile.exists(path):
            continue
        anomalies = anomalies_util.load_anomalies_binary(path)
        lines = [f"{name}: {info.description}" for name, info in sorted(anomalies.anomaly_info.items())]
        if anomalies.HasField("dataset_anomaly_info"):
            lines.append(f"(dataset): {anomalies.dataset_anomaly_info.description}")
        if lines:
            found[split] = lines
    return found


def describe(found: Dict[str, List[str]]) -> str:
    return "; ".join(f"{split}: " + ", ".join(lines) for split, lines in sorted(found.items()))


@tfx.dsl.components.component
def ConfiguredSchema(curated: tfx.dsl.components.InputArtifact[tfx.types.standard_artifacts.Schema],
                     bounds_json: tfx.dsl.components.Parameter[str],
                     schema: tfx.dsl.components.OutputArtifact[tfx.types.standard_artifacts.Schema]) -> None:
    """The curated schema with the domains of `bounds_json` ({feature: [min, max]})."""
    curated_schema = io_utils.SchemaReader().read(io_utils.get_only_uri_in_dir(curated.uri))
    limits = {name: tuple(pair) for name, pair in json.loads(bounds_json).items()}
    io_utils.write_pbtxt_file(os.path.join(schema.uri, SCHEMA_FILE), apply_bounds(curated_schema, limits))


@tfx.dsl.components.component
def AnomaliesGate(anomalies: tfx.dsl.components.InputArtifact[tfx.types.standard_artifacts.ExampleAnomalies],
                  on_anomalies: tfx.dsl.components.Parameter[str]) -> None:
    """Stops the run (fail) or logs (warn) when ExampleValidator found anomalies."""
    found = read_anomalies(anomalies.uri, artifact_utils.decode_split_names(anomalies.split_names))
    if not found:
        logging.info("ExampleValidator found no anomalies")
        return
    message = f"ExampleValidator found anomalies in the data: {describe(found)}"
    if on_anomalies == "fail":
        raise RuntimeError(message + ". Fix the data, widen the bound (validation.* in the config; "
                           "schemas/schema.pbtxt for the rest) or set validation.on_anomalies=warn")
    logging.warning("%s (validation.on_anomalies=warn: the run goes on)", message)
