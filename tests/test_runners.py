"""The configuration loader and the Kubeflow V2 compilation of the same pipeline."""
import json

import pytest

from components.config import PipelineConfig, load_config
from pipeline.kubeflow_v2_runner import compile_pipeline


def test_overrides_parse_values_and_unknown_keys_are_named(tmp_path):
    config = load_config("pipeline/configs/demo.yaml", ["trainer.epochs=3", "beam_args=[]",
                                                        "trainer.spec_augment.enabled=false"])
    assert config.trainer.epochs == 3 and config.beam_args == []
    assert config.trainer.spec_augment.enabled is False
    assert config.data.split_buckets == {"train": 14, "eval": 3, "test": 3}
    with pytest.raises(ValueError, match=r"config.trainer: unknown setting\(s\) \['epoch'\]"):
        load_config(None, ["trainer.epoch=3"])
    assert PipelineConfig.from_dict(config.to_dict()) == config  # what custom_config carries


def test_kubeflow_runner_compiles_every_component_into_one_image(tmp_path):
    out = tmp_path / "spec.json"
    compile_pipeline("pipeline/configs/kubeflow.yaml", [], "registry.example/tfx-audio:1", str(out))
    spec = json.loads(out.read_text())["pipelineSpec"]
    tasks = set(spec["root"]["dag"]["tasks"])
    assert tasks == {"WavExampleGen", "StatisticsGen", "ImportSchemaGen", "ConfiguredSchema",
                     "ExampleValidator", "AnomaliesGate", "Transform",
                     "Trainer", "Evaluator", "Pusher",
                     # KFP v2 splits the resolver into one query per channel.
                     "latest_blessed_model_resolver-model-resolver",
                     "latest_blessed_model_resolver-model-blessing-resolver"}
    executors = spec["deploymentSpec"]["executors"]
    images = {e["container"]["image"] for e in executors.values() if "container" in e}
    assert images == {"registry.example/tfx-audio:1"}
    example_gen_args = " ".join(executors["WavExampleGen_executor"]["container"]["args"])
    assert "DataflowRunner" in example_gen_args  # Beam flags reach the Beam components
