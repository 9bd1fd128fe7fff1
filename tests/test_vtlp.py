"""VTLP of log-mel features (components/training/vtlp.py) and the per-utterance mel normalization."""
import numpy as np
import pytest
import tensorflow as tf

from components import features
from components.config import FeatureConfig, VtlpConfig
from components.models import model
from components.training import vtlp
from components.transform import preprocessing

CFG = FeatureConfig(clip_seconds=0.5)


def _tone_log_mel(hz: float) -> tf.Tensor:
    t = np.arange(CFG.num_samples) / features.SAMPLE_RATE
    return preprocessing.log_mel(tf.constant([np.sin(2 * np.pi * hz * t)], tf.float32), CFG)


def test_a_factor_of_one_leaves_the_features_as_they_are():
    mel = _tone_log_mel(700.0)
    np.testing.assert_allclose(vtlp.warp(mel, tf.constant([1.0]), CFG, 4800.0).numpy(), mel.numpy(), atol=1e-5)


@pytest.mark.parametrize("alpha", [0.9, 1.1])
def test_a_formant_moves_to_alpha_times_its_frequency(alpha):
    """A spectral peak at f lands where a peak at alpha * f is (below the warp's knee)."""
    for hz in (600.0, 1500.0, 3000.0):
        warped = vtlp.warp(_tone_log_mel(hz), tf.constant([alpha]), CFG, 4800.0)
        peak = int(np.argmax(warped.numpy()[0].mean(axis=0)))
        expected = int(np.argmax(_tone_log_mel(alpha * hz).numpy()[0].mean(axis=0)))
        assert abs(peak - expected) <= 1 and peak != int(np.argmax(_tone_log_mel(hz).numpy()[0].mean(axis=0)))


def test_source_frequencies_invert_the_piecewise_linear_warp():
    nyquist, boundary = features.SAMPLE_RATE / 2, 4800.0
    target = tf.constant([[100.0, 2000.0, 4300.0, 5000.0, 7000.0, nyquist]] * 2)
    alpha = tf.constant([[0.9], [1.1]])
    source = vtlp.source_hz(target, alpha, boundary).numpy()
    for a, row, out in zip((0.9, 1.1), source, target.numpy()):
        f0 = boundary * min(a, 1.0) / a
        forward = np.where(row <= f0, a * row, nyquist - (nyquist - a * f0) / (nyquist - f0) * (nyquist - row))
        np.testing.assert_allclose(forward, out, rtol=1e-5)
    assert source[:, -1] == pytest.approx([nyquist, nyquist])  # the band's edge stays


def test_factors_are_drawn_in_range_with_the_probability_and_repeat_with_the_seed():
    cfg = VtlpConfig(probability=0.5, factor_range=[0.9, 1.1])
    seeds = tf.random.stateless_uniform([2000, 2], [1, 2], 0, 2 ** 30, tf.int64)
    factors = vtlp.draw_factors(seeds, 2000, cfg).numpy()
    np.testing.assert_array_equal(factors, vtlp.draw_factors(seeds, 2000, cfg).numpy())
    warped = factors[factors != 1.0]
    assert 0.45 < warped.size / factors.size < 0.55 and warped.min() >= 0.9 and warped.max() <= 1.1
    off = VtlpConfig(probability=0.0)
    mel = _tone_log_mel(800.0)
    assert vtlp.augment(mel, off, CFG) is mel


def test_the_utterance_mean_removes_a_fixed_channel_gain_and_ignores_padding():
    rng = np.random.default_rng(0)
    frames, bins = 40, 8
    mel = tf.constant(rng.standard_normal((2, frames, bins)), tf.float32)
    lengths = tf.constant([CFG.frame_length + 19 * CFG.frame_step, 10_000], tf.int64)  # 20 frames; all
    gain = tf.constant(rng.standard_normal((1, 1, bins)), tf.float32)  # a filter: + a constant per bin
    coloured = model._without_utterance_mean(mel + gain, lengths, CFG).numpy()
    plain = model._without_utterance_mean(mel, lengths, CFG).numpy()
    np.testing.assert_allclose(coloured, plain, atol=1e-5)
    np.testing.assert_allclose(plain[0, :20].mean(axis=0), 0.0, atol=1e-5)  # over the valid frames only
    np.testing.assert_allclose(plain[1].mean(axis=0), 0.0, atol=1e-5)


@pytest.mark.parametrize("denoiser", [False, True])
def test_the_model_warps_its_log_mel_when_training_only(monkeypatch, denoiser):
    from components.config import load_config

    config = load_config(None, ["trainer.backbone=logmel_cnn", "features.clip_seconds=0.5",
                                "trainer.vtlp.probability=1", f"trainer.denoiser.enabled={str(denoiser).lower()}"])
    built = model.build_model(config.trainer, config.features, num_classes=3)
    warped = []
    real_warp = vtlp.warp
    monkeypatch.setattr(vtlp, "warp", lambda *a, **k: warped.append(a[1]) or real_warp(*a, **k))
    n = config.features.num_samples
    inputs = {features.WAVEFORM: tf.random.normal([2, n]), features.NUM_SAMPLES: tf.constant([n, n], tf.int64),
              features.LOG_MEL: tf.random.normal([2, config.features.num_frames, config.features.num_mel_bins])}
    built(inputs, training=False)
    assert not warped
    built(inputs, training=True)
    assert len(warped) == 1 and np.all((warped[0].numpy() >= 0.9) & (warped[0].numpy() <= 1.1))
