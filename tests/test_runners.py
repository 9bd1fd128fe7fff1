"""The configuration loader: --set overrides, unknown keys, the round trip through custom_config.
(The Kubeflow V2 compilation is tested in test_cli.py.)"""
import os

import pytest

from components.config import PipelineConfig, load_config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The demo's background noise folder (data/demo_noise, written by scripts/demo.sh) is not in a clean clone,
# and building a pipeline checks it: tests that build demo.yaml without it turn the mixing off.
NO_DEMO_NOISE = "trainer.background.probability=0.0"


def test_overrides_parse_values_and_unknown_keys_are_named(tmp_path):
    config = load_config("pipeline/configs/demo.yaml", ["trainer.epochs=3", "beam_args=[]",
                                                        "trainer.spec_augment.enabled=false"])
    assert config.trainer.epochs == 3 and config.beam_args == []
    assert config.trainer.spec_augment.enabled is False
    assert config.data.split_buckets == {"train": 14, "eval": 3, "test": 3}
    with pytest.raises(ValueError, match=r"config.trainer: unknown setting\(s\) \['epoch'\]"):
        load_config(None, ["trainer.epoch=3"])
    assert PipelineConfig.from_dict(config.to_dict()) == config  # what custom_config carries


def test_a_held_out_folder_without_clips_is_named_when_the_pipeline_is_built(tmp_path):
    from pipeline.pipeline import create_pipeline  # imports TFX

    (tmp_path / "heldout").mkdir()
    config = load_config("pipeline/configs/demo.yaml", [f"evaluator.heldout_base={tmp_path / 'heldout'}",
                                                        f"output_dir={tmp_path / 'out'}", NO_DEMO_NOISE])
    with pytest.raises(ValueError, match=r"evaluator.heldout_base=.*heldout: no file matches \*/\*.wav"):
        create_pipeline(config)


def test_the_trainer_gets_its_noise_folders_as_absolute_paths_checked_when_the_pipeline_is_built(
        tmp_path, monkeypatch):
    import json

    from pipeline.pipeline import create_pipeline  # imports TFX

    monkeypatch.chdir(tmp_path)
    (tmp_path / "noise" / "hum").mkdir(parents=True)
    overrides = [f"output_dir={tmp_path / 'out'}", "trainer.context.clips=4", "trainer.context.noise_base=noise",
                 "trainer.objective=joint", "trainer.denoiser.trainable=true",
                 "trainer.background.probability=0.8", "trainer.background.noise_base=noise"]
    with pytest.raises(ValueError, match=r"trainer.context.noise_base=.*noise: no file matches"):
        create_pipeline(load_config(f"{REPO}/pipeline/configs/demo.yaml", overrides))
    (tmp_path / "noise" / "hum" / "hum_0.wav").write_bytes(b"")
    trainer = next(c for c in create_pipeline(load_config(f"{REPO}/pipeline/configs/demo.yaml", overrides)).components
                   if c.id == "Trainer")
    config = json.loads(trainer.exec_properties["custom_config"])["config"]
    for section in ("context", "background"):  # read wherever the Trainer runs
        assert config["trainer"][section]["noise_base"] == str(tmp_path / "noise")


def test_local_runs_name_the_project_setup_file_so_tfx_builds_no_package_before_each_beam_component():
    """TFX's BaseBeamExecutor packs its own installation into an sdist (15 s here) for Beam
    workers to install unless a dependency flag is given; the DirectRunner installs nothing."""
    from tfx.utils import dependency_utils

    from pipeline.local_runner import local_beam_args
    from pipeline.pipeline import REPO_ROOT

    args = local_beam_args(load_config("pipeline/configs/demo.yaml", []))
    assert args[-1] == f"--setup_file={REPO_ROOT}/setup.py"
    assert dependency_utils.make_beam_dependency_flags(args) == args  # TFX adds no --extra_package
    # The user's own flags stand: another runner, or dependencies already named.
    for given in (["--runner=DataflowRunner"], ["--runner", "FlinkRunner"], ["--requirements_file=r.txt"],
                  ["--sdk_container_image=img"]):
        assert local_beam_args(load_config(None, [f"beam_args=[{', '.join(given)}]"])) == given
    # Flink with a pool of this installation's workers (pipeline/job_servers.py) installs nothing either.
    pool = ["--runner=FlinkRunner", "--environment_type=EXTERNAL", "--environment_config=127.0.0.1:50000"]
    args = local_beam_args(load_config(None, [f"beam_args=[{', '.join(pool)}]"]))
    assert args[:3] == pool and args[-1] == f"--setup_file={REPO_ROOT}/setup.py"


def test_the_transform_is_keyed_on_the_feature_settings_alone_so_retraining_reuses_it(tmp_path):
    """TFX's cache keys a component on its exec properties: the Transform's custom_config
    must change with the features its preprocessing_fn computes, and with nothing else."""
    from pipeline.pipeline import create_pipeline  # imports TFX

    def transform_config(*overrides):
        config = load_config("pipeline/configs/demo.yaml", [f"output_dir={tmp_path}", NO_DEMO_NOISE, *overrides])
        transform = next(c for c in create_pipeline(config).components if c.id == "Transform")
        return transform.exec_properties["custom_config"]

    base = transform_config()
    assert transform_config("trainer.learning_rate=0.0", "trainer.epochs=1", "evaluator.min_accuracy=0.5") == base
    assert transform_config("features.num_mel_bins=40") != base


@pytest.mark.parametrize("name", ["demo", "denoise", "calls", "production"])
def test_every_shipped_local_config_builds_a_pipeline(name, tmp_path):
    """The shipped configs as a user runs them: `warm_start: pretrained` (denoise.yaml) is the packaged
    weights' name, not a path (a run failed on it before the Trainer started)."""
    import json

    from pipeline.pipeline import create_pipeline, trainer_noise_folders  # imports TFX

    (tmp_path / "noise" / "hum").mkdir(parents=True)  # data/real and the demo's data are not in a clean clone
    (tmp_path / "noise" / "hum" / "hum_0.wav").write_bytes(b"")
    config = load_config(f"{REPO}/pipeline/configs/{name}.yaml", [f"output_dir={tmp_path / 'out'}"])
    config = load_config(f"{REPO}/pipeline/configs/{name}.yaml", [f"output_dir={tmp_path / 'out'}", *(
        f"trainer.{section}.noise_base={tmp_path / 'noise'}" for section in trainer_noise_folders(config))])
    trainer = next(c for c in create_pipeline(config).components if c.id == "Trainer")
    custom = json.loads(trainer.exec_properties["custom_config"])["config"]
    assert custom["trainer"]["denoiser"]["warm_start"] == config.trainer.denoiser.warm_start
