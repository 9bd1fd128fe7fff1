"""The configuration is validated on load: types, ranges, choices and unknown keys, each
error naming the setting's dotted path, the value given and what is allowed."""
import dataclasses
import glob
import os

import pytest

from components.config import ConfigError, PipelineConfig, load_config

SHIPPED = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "pipeline", "configs", "*.yaml")))


def _error(overrides, path=None) -> str:
    with pytest.raises(ValueError) as info:
        load_config(path, overrides)
    assert isinstance(info.value, ConfigError)
    return str(info.value)


def test_a_value_of_the_wrong_type_is_refused_naming_the_key_and_the_value():
    message = _error(["trainer.epochs=abc"])
    assert "trainer.epochs" in message and "'abc'" in message and "integer" in message
    assert "integer" in _error(["trainer.epochs=2.5"])


def test_a_bool_is_not_a_number():
    assert "trainer.epochs: got True" in _error(["trainer.epochs=true"])
    assert "trainer.learning_rate: got True" in _error(["trainer.learning_rate=yes"])


def test_a_wrong_type_inside_a_nested_section_is_named_with_its_full_path():
    message = _error(["trainer.spec_augment.freq_masks=many"])
    assert "trainer.spec_augment.freq_masks: got 'many'" in message
    message = _error(["trainer.spec_augment=3"])
    assert "trainer.spec_augment: got 3" in message and "SpecAugmentConfig" in message
    assert "data.split_buckets.train: got 'x'" in _error(["data.split_buckets={train: x, eval: 1}"])


@pytest.mark.parametrize("override, named, allowed", [
    ("trainer.epochs=0", "trainer.epochs: got 0", "greater than or equal to 1"),
    ("trainer.learning_rate=-1e-3", "trainer.learning_rate: got '-1e-3'", "greater than or equal to 0"),
    ("trainer.spec_augment.time_mask_max_ratio=1.5", "trainer.spec_augment.time_mask_max_ratio: got 1.5",
     "less than or equal to 1"),
    ("data.max_duration_s=0", "data.max_duration_s: got 0", "greater than 0"),
    ("data.split_buckets={train: 0, eval: 1}", "data.split_buckets.train: got 0", "greater than or equal to 1"),
    ("data.vad_aggressiveness=4", "data.vad_aggressiveness: got 4", "less than or equal to 3"),
])
def test_an_out_of_range_value_is_refused_naming_the_key_the_value_and_the_range(override, named, allowed):
    message = _error([override])
    assert named in message and allowed in message, message


@pytest.mark.parametrize("override, named, allowed", [
    ("data.layout=nested", "data.layout: got 'nested'", "'folders' or 'paired'"),
    ("data.segmentation=energy", "data.segmentation: got 'energy'", "'fixed' or 'vad'"),
    ("data.unlabelled_spans=keep", "data.unlabelled_spans: got 'keep'", "'drop' or 'background'"),
    ("trainer.objective=both", "trainer.objective: got 'both'", "'classify', 'denoise' or 'joint'"),
    ("trainer.precision=fp16", "trainer.precision: got 'fp16'", "'mixed_float16'"),
    ("trainer.backbone=resnet", "trainer.backbone: got 'resnet'", "'wav2vec2', 'logmel_cnn' or 'bc_resnet'"),
    ("trainer.spec_augment.policy=XL", "trainer.spec_augment.policy: got 'XL'", "'LB'"),
])
def test_a_value_outside_the_choices_is_refused_naming_the_choices(override, named, allowed):
    message = _error([override])
    assert named in message and allowed in message, message


def test_unknown_keys_are_refused_naming_them_and_the_known_ones():
    message = _error(["trainer.epoch=3"])
    assert "config.trainer: unknown setting(s) ['epoch']" in message and "'epochs'" in message
    message = _error(["trainer.spec_augment.width=3"])
    assert "config.trainer.spec_augment: unknown setting(s) ['width']" in message
    assert "'freq_mask_width'" in message
    assert "config: unknown setting(s) ['colour']" in _error(["colour=red"])


def test_every_problem_is_listed_one_per_line():
    lines = _error(["trainer.epochs=abc", "data.layout=nested", "trainer.epoch=3"]).splitlines()
    assert len(lines) == 3
    assert [line.split(":")[0] for line in lines] == ["data.layout", "trainer.epochs", "config.trainer"]


def test_a_set_value_yaml_cannot_parse_is_taken_as_a_string():
    assert load_config(None, ["data.file_pattern=*/*.wav"]).data.file_pattern == "*/*.wav"
    assert load_config(None, ["data.file_pattern=*.wav"]).data.file_pattern == "*.wav"
    config = load_config(None, ["trainer.epochs=3", "trainer.spec_augment.enabled=false", "beam_args=[]"])
    assert config.trainer.epochs == 3 and config.trainer.spec_augment.enabled is False and config.beam_args == []


def test_numbers_as_yaml_writes_them_become_floats(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("trainer:\n  learning_rate: 3e-5\n  weight_decay: 0\n")  # YAML 1.1: '3e-5' is a string
    config = load_config(str(path))
    assert config.trainer.learning_rate == 3e-5 and isinstance(config.trainer.learning_rate, float)
    assert config.trainer.weight_decay == 0.0 and isinstance(config.trainer.weight_decay, float)
    assert load_config(None, ["trainer.learning_rate=3e-5"]).trainer.learning_rate == 3e-5
    assert load_config(None, ["data.segment_s=1"]).data.segment_s == 1.0
    # learning rate 0 stays allowed: the end-to-end test trains a deliberately broken model with it.
    assert load_config(None, ["trainer.learning_rate=0"]).trainer.learning_rate == 0.0


def test_cross_field_checks_still_run_with_their_messages():
    assert "trainer.objective=joint trains the denoiser" in _error(["trainer.objective=joint"])
    assert "would be cropped" in _error(["data.segment_s=2.0"])


@pytest.mark.parametrize("path", SHIPPED, ids=os.path.basename)
def test_every_shipped_config_loads_and_survives_the_custom_config_round_trip(path):
    config = load_config(path)
    assert type(config) is PipelineConfig
    assert PipelineConfig.from_dict(config.to_dict()) == config  # what custom_config carries
    # Still plain dataclasses: the rest of the code copies them and builds them directly.
    copy = dataclasses.replace(config, trainer=dataclasses.replace(config.trainer, epochs=1))
    assert copy.trainer.epochs == 1 and dataclasses.asdict(copy)["trainer"]["epochs"] == 1


def test_the_shipped_configs_are_found():
    assert {os.path.basename(path) for path in SHIPPED} >= {"demo.yaml", "calls.yaml", "production.yaml",
                                                             "kubeflow.yaml"}


def test_kubeflow_resources_pair_accelerator_settings_and_keep_defaults_when_one_key_is_set():
    with pytest.raises(ConfigError, match=r"kubeflow.trainer: accelerator_type '' with accelerator_count 1"):
        load_config(None, ["kubeflow.trainer.accelerator_count=1"])
    config = load_config(None, ["kubeflow.trainer.accelerator_type=nvidia.com/gpu",
                                "kubeflow.trainer.accelerator_count=1", "kubeflow.beam.cpu=3"])
    trainer, beam = config.kubeflow.trainer, config.kubeflow.beam
    assert (trainer.cpu, trainer.memory_gb, trainer.accelerator_count) == (4.0, 16.0, 1)  # the rest kept
    assert (beam.cpu, beam.memory_gb) == (3.0, 8.0)
    with pytest.raises(ConfigError, match=r"metadata.backend: got 'postgres'"):
        load_config(None, ["metadata.backend=postgres"])


def test_the_components_cache_keys_ignore_which_held_out_corpus_is_scored():
    """Reading the held-out test part (evaluator.heldout_base) must leave the Trainer's custom_config, and
    so its cache key, as it was: only the held-out nodes run again. A setting a component reads still counts."""
    validation = load_config(None, ["evaluator.heldout_base=data/demo_heldout/validation"])
    test = load_config(None, ["evaluator.heldout_base=data/demo_heldout/test", "evaluator.heldout_file_pattern=*.wav"])
    assert validation.components_dict() == test.components_dict()
    assert load_config(None, ["evaluator.min_accuracy=0.9"]).components_dict() != validation.components_dict()
