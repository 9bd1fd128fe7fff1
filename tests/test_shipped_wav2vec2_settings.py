"""The shipped configs train wav2vec2 coherently: a fine-tuning learning rate goes with
pretrained weights from a local save_pretrained directory (no hub download at run time);
random weights go with an unfrozen feature encoder and a from-scratch rate."""
import glob
import os

import pytest

from components.config import TrainerConfig, Wav2Vec2Config, load_config

SHIPPED = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "pipeline", "configs", "*.yaml")))
FINE_TUNING_MAX_LR = 1e-4  # HF's wav2vec2 classification recipe: 3e-5


def wav2vec2_problems(trainer: TrainerConfig) -> list:
    """What is incoherent in the trainer's wav2vec2 settings (nothing for other backbones)."""
    if trainer.backbone != "wav2vec2":
        return []
    w2v = trainer.wav2vec2
    if w2v.pretrained:
        return [] if os.path.isabs(w2v.pretrained) else [f"pretrained {w2v.pretrained!r} is not a local directory"]
    problems = []
    if trainer.learning_rate <= FINE_TUNING_MAX_LR:
        problems.append(f"learning_rate {trainer.learning_rate} is a fine-tuning rate but there are no "
                        f"pretrained weights")
    if w2v.freeze_feature_encoder or w2v.freeze_layers:
        problems.append("random layers are frozen")
    return problems


@pytest.mark.parametrize("path", SHIPPED, ids=os.path.basename)
def test_every_shipped_config_trains_wav2vec2_coherently(path):
    assert wav2vec2_problems(load_config(path).trainer) == []


def test_the_wav2vec2_configs_are_checked():
    checked = {os.path.basename(p) for p in SHIPPED if load_config(p).trainer.backbone == "wav2vec2"}
    assert checked >= {"production.yaml", "kubeflow.yaml"}


def test_the_check_flags_a_fine_tuning_rate_on_random_weights():
    fine_tune_random = TrainerConfig(backbone="wav2vec2", learning_rate=3e-5, wav2vec2=Wav2Vec2Config(pretrained=""))
    assert len(wav2vec2_problems(fine_tune_random)) == 2  # the rate, and the frozen random encoder
    assert wav2vec2_problems(TrainerConfig(backbone="wav2vec2", wav2vec2=Wav2Vec2Config(pretrained="gs://b/w2v")))
    from_scratch = TrainerConfig(backbone="wav2vec2", learning_rate=1e-3,
                                 wav2vec2=Wav2Vec2Config(pretrained="", freeze_feature_encoder=False))
    assert wav2vec2_problems(from_scratch) == []
