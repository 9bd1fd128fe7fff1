"""trainer.denoiser.warm_start: the weights a pushed model carries start a new denoiser where the
old one ended; another design's weights, or none, are refused naming the setting."""
import numpy as np
import pytest
import tensorflow as tf

from components.config import ConfigError, DenoiserConfig, load_config
from components.models import denoiser_weights
from components.models.denoiser import build_denoiser

DTLN = DenoiserConfig(enabled=True, design="dtln", lstm_units=16, encoder_size=32)


def _built(cfg, seed):
    tf.random.set_seed(seed)
    denoiser = build_denoiser(cfg)
    denoiser(tf.zeros([1, 2000]))
    return denoiser


def test_a_new_denoiser_starts_from_the_saved_weights(tmp_path):
    trained, fresh = _built(DTLN, 1), _built(DTLN, 2)
    audio = tf.random.normal([1, 4000], seed=3)
    assert not np.allclose(trained(audio), fresh(audio))  # different starts
    path = denoiser_weights.save(trained, str(tmp_path))
    denoiser_weights.load(fresh, str(tmp_path))  # the model directory, or the file itself
    np.testing.assert_array_equal(trained(audio), fresh(audio))
    denoiser_weights.load(_built(DTLN, 4), path)


def test_weights_of_another_design_or_none_are_refused(tmp_path):
    denoiser_weights.save(_built(DTLN, 1), str(tmp_path))
    with pytest.raises(ValueError, match="warm_start=.*do not fit"):
        denoiser_weights.load(_built(DenoiserConfig(enabled=True, channels=16, gru_units=8), 2), str(tmp_path))
    with pytest.raises(ValueError, match="warm_start=.*no such file"):
        denoiser_weights.load(_built(DTLN, 2), str(tmp_path / "missing"))


def test_warm_start_needs_the_denoiser_on():
    with pytest.raises(ConfigError, match="warm_start starts the denoiser"):
        load_config(None, ["trainer.denoiser.warm_start=pretrained/x"])


def test_the_packaged_pretrained_denoiser_loads_by_name_and_denoises_speech():
    """`warm_start: pretrained` (components/models/pretrained/MODEL_CARD.md): the default DTLN takes its weights,
    and they take a good part of a steady noise out of a sentence they never heard (a random DTLN does not)."""
    from components.audio.snr import improvement_db, si_snr_db
    from pipeline.datagen import keywords

    cfg = DenoiserConfig(enabled=True, design="dtln")
    denoiser = _built(cfg, 1)
    clean = keywords.speak("thank you for calling, how can I help you today", "en-us", 160, 50)
    noise = np.random.default_rng(0).standard_normal(len(clean)).astype(np.float32)
    noisy = clean + noise * np.sqrt(np.mean(clean ** 2) / np.mean(noise ** 2)) * 10 ** (-5 / 20)  # 5 dB
    noisy /= np.std(noisy)  # as the Transform gives it (and dtln_level_dbfs takes it from there)
    random_gain = improvement_db(si_snr_db, clean, noisy, denoiser(noisy[np.newaxis]).numpy()[0])
    denoiser_weights.load(denoiser, denoiser_weights.PRETRAINED_NAME)
    pretrained_gain = improvement_db(si_snr_db, clean, noisy, denoiser(noisy[np.newaxis]).numpy()[0])
    assert random_gain < 0.0 and pretrained_gain > 4.0, (random_gain, pretrained_gain)  # (the authors' weights: 6.7
    # dB; R9, the project's own, 3.8)
