"""Runs TFX's real executors (our WAV ExampleGen, TFX Transform, TFX Trainer)
outside a pipeline, so trainer tests exercise `run_fn` exactly as TFX calls it."""
import json
import os
import sys

import numpy as np
from tfx import v1 as tfx
from tfx.components.trainer import executor as trainer_executor
from tfx.components.transform import executor as transform_executor
from tfx.types import artifact_utils, standard_artifacts
from tfx.utils import proto_utils

from components.config import PipelineConfig
from pipeline.pipeline import PREPROCESSING_FN, REPO_ROOT, RUN_FN
from tests.audio_helpers import tone, write_wav
from tests.test_wav_example_gen import _run_executor

LABELS = ("low", "mid", "high")


def _artifact(cls, uri, splits=None):
    artifact = cls()
    artifact.uri = str(uri)
    os.makedirs(artifact.uri, exist_ok=True)
    if splits:
        artifact.split_names = artifact_utils.encode_split_names(list(splits))
    return artifact


def make_transformed(root, config: PipelineConfig, speakers=12):
    """Tones of three pitch bands spoken by `speakers` groups -> ExampleGen -> Transform
    (its analysis). Returns the input dict the Trainer executor takes."""
    rng = np.random.default_rng(0)
    base = root / "audio"
    for s in range(speakers):
        for k, label in enumerate(LABELS):
            freq = 300 * 3 ** k * (1 + 0.05 * s)
            write_wav(base / label / f"spk{s}.wav", tone(0.3, freq) + 0.02 * rng.standard_normal(4800))
    examples = _run_executor(base, root / "examples", {"train": 4, "eval": 1}, segment_s=config.segment_s)
    schema = _artifact(standard_artifacts.Schema, root / "schema")
    with open(os.path.join(REPO_ROOT, config.schema_file)) as src, \
            open(os.path.join(schema.uri, "schema.pbtxt"), "w") as dst:
        dst.write(src.read())
    graph = _artifact(standard_artifacts.TransformGraph, root / "transform_graph")
    transform_executor.Executor().Do(  # analysis only, as in the pipeline (materialize=False)
        {"examples": [examples], "schema": [schema]},
        {"transform_graph": [graph]},
        {"preprocessing_fn": PREPROCESSING_FN,
         "custom_config": json.dumps({"config": config.to_dict()}),
         "splits_config": proto_utils.proto_to_json(tfx.proto.SplitsConfig(analyze=["train"])),
         "disable_statistics": 1, "force_tf_compat_v1": 0})
    return {"examples": [examples], "transform_graph": [graph], "schema": [schema]}


def run_trainer(input_dict, config: PipelineConfig, model_uri, model_run_uri):
    """TFX's GenericExecutor calling our run_fn; returns the Model artifact."""
    model = _artifact(standard_artifacts.Model, model_uri)
    model_run = _artifact(standard_artifacts.ModelRun, model_run_uri)
    trainer_executor.GenericExecutor().Do(
        input_dict, {"model": [model], "model_run": [model_run]},
        {"train_args": proto_utils.proto_to_json(tfx.proto.TrainArgs(splits=["train"])),
         "eval_args": proto_utils.proto_to_json(tfx.proto.EvalArgs(splits=["eval"])),
         "run_fn": RUN_FN, "custom_config": json.dumps({"config": config.to_dict()})})
    return model


def save_input_dict(input_dict, path):
    """Writes the artifact URIs so a subprocess can rebuild `input_dict`."""
    with open(path, "w") as f:
        json.dump({key: artifacts[0].uri for key, artifacts in input_dict.items()}, f)


def main():
    """Subprocess entry: python -m tests.tfx_executors INPUT_DICT_JSON CONFIG_JSON MODEL_URI MODEL_RUN_URI."""
    from absl import logging
    logging.set_verbosity(logging.INFO)  # as TFX's runners do
    input_dict_path, config_json, model_uri, model_run_uri = sys.argv[1:5]
    with open(input_dict_path) as f:
        uris = json.load(f)
    input_dict = {
        "examples": [_artifact(standard_artifacts.Examples, uris["examples"], ["train", "eval"])],
        "transform_graph": [_artifact(standard_artifacts.TransformGraph, uris["transform_graph"])],
        "schema": [_artifact(standard_artifacts.Schema, uris["schema"])]}
    run_trainer(input_dict, PipelineConfig.from_dict(json.loads(config_json)), model_uri, model_run_uri)


if __name__ == "__main__":  # the caller's environment sets TF_USE_LEGACY_KERAS=1
    main()
