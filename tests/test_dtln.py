"""DTLN (components/models/dtln.py): causal with one frame of latency, the paper's size, any length in
and out, every weight trained by the SNR loss, and float32 out under mixed precision."""
import dataclasses

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from components.config import DenoiserConfig, load_config
from components.models import model as model_lib
from components.models.denoiser import build_denoiser, snr
from components.models.dtln import DTLN

CFG = DenoiserConfig(enabled=True, design="dtln")


def test_the_design_setting_builds_dtln():
    assert isinstance(build_denoiser(CFG), DTLN)
    assert not isinstance(build_denoiser(DenoiserConfig(enabled=True)), DTLN)


def _twins(**changes):
    """Two built DTLNs with the same weights: CFG with the first value of each changed setting, then the second."""
    first, second = (build_denoiser(dataclasses.replace(CFG, **{k: v[i] for k, v in changes.items()})) for i in (0, 1))
    first(tf.zeros([1, 1024]))
    second(tf.zeros([1, 1024]))
    second.set_weights(first.get_weights())
    return first, second


def _changed_after(x, t):
    return tf.concat([x[:, :t], tf.random.normal([2, 12000 - t], seed=2)], axis=1)


@pytest.mark.parametrize("warmup_seconds", [0.0, 0.25])
def test_output_before_a_change_of_the_input_stays_the_same_up_to_one_frame(warmup_seconds):
    """Causal, with one frame of latency; with a warm-up, from the end of its lead-in on (t is past 0.25 s)."""
    denoiser = build_denoiser(dataclasses.replace(CFG, dtln_warmup_seconds=warmup_seconds))
    x = tf.random.normal([2, 12000], seed=1)
    t = 7000
    before, after = denoiser(x), denoiser(_changed_after(x, t))
    latency = CFG.frame_length - 1
    np.testing.assert_array_equal(before[:, :t - latency], after[:, :t - latency])  # the past: untouched
    assert float(tf.reduce_max(tf.abs(before[:, t:] - after[:, t:]))) > 1e-3  # the changed part: changed


def test_the_warm_up_reads_ahead_inside_its_lead_in_only():
    """The stated cost of the warm-up: the first warmup_seconds of a stream wait for their audio."""
    warm, cold = _twins(dtln_warmup_seconds=(0.25, 0.0))
    x = tf.random.normal([2, 12000], seed=1)
    t = 3000  # inside the 4,000-sample lead-in
    assert float(tf.reduce_max(tf.abs(warm(x)[:, :t // 2] - warm(_changed_after(x, t))[:, :t // 2]))) > 1e-4
    np.testing.assert_array_equal(cold(x)[:, :t // 2], cold(_changed_after(x, t))[:, :t // 2])


def test_the_warm_up_is_the_cold_model_on_the_reflected_start_cut_off():
    warm, cold = _twins(dtln_warmup_seconds=(0.25, 0.0))
    x = np.random.default_rng(9).standard_normal([2, 9000]).astype(np.float32)
    reflected = np.pad(x, [(0, 0), (4000, 0)], mode="reflect")  # x[4000:0:-1], then x
    np.testing.assert_allclose(warm(x).numpy(), cold(reflected).numpy()[:, 4000:], atol=1e-5)


def test_the_magnitude_input_is_brought_to_its_level_and_back():
    at_level, as_given = _twins(dtln_input=("magnitude", "magnitude"), dtln_level_dbfs=(-25.0, None))
    x = tf.random.normal([2, 8000], seed=7)
    gain = 10.0 ** (-25.0 / 20.0)
    np.testing.assert_allclose(at_level(x).numpy(), (as_given(x * gain) / gain).numpy(), rtol=1e-4, atol=1e-4)
    assert float(tf.reduce_max(tf.abs(at_level(x) - as_given(x)))) > 1e-3  # the level matters to these weights


def test_the_log_norm_input_ignores_the_level():
    one, other = _twins(dtln_input=("log_norm", "log_norm"), dtln_level_dbfs=(-25.0, None))
    x = tf.random.normal([1, 8000], seed=8)
    np.testing.assert_array_equal(one(x).numpy(), other(x).numpy())


def test_about_a_million_parameters_as_in_the_paper():
    denoiser = build_denoiser(CFG)
    denoiser(tf.zeros([1, 4000]))
    assert 0.9e6 < denoiser.count_params() < 1.1e6  # DTLN: 0.99 M (Westhausen & Meyer 2020, Table 1)


@pytest.mark.parametrize("samples", [0, 1, 2, 127, 513, 16001])
def test_any_length_comes_back_at_its_length(samples):
    assert build_denoiser(CFG)(tf.random.normal([1, samples], seed=3)).shape == (1, samples)


def test_the_snr_loss_reaches_every_weight():
    denoiser = build_denoiser(CFG)
    clean = tf.random.normal([2, 8000], seed=4)
    noisy = clean + 0.3 * tf.random.normal([2, 8000], seed=5)
    with tf.GradientTape() as tape:
        loss = -tf.reduce_mean(snr(clean, denoiser(noisy, training=True), tf.ones_like(clean)))
    grads = tape.gradient(loss, denoiser.trainable_variables)
    assert denoiser.trainable_variables and all(g is not None and float(tf.reduce_sum(tf.abs(g))) > 0 for g in grads)


def test_snr_is_the_power_ratio_and_not_scale_invariant():
    reference = tf.constant([[1.0, -1.0, 1.0, -1.0]])
    estimate = reference + tf.constant([[0.1, 0.1, -0.1, -0.1]])  # noise power 1/100 of the signal's
    np.testing.assert_allclose(snr(reference, estimate, tf.ones_like(reference)).numpy(), [20.0], atol=1e-4)
    assert float(snr(reference, 2 * reference, tf.ones_like(reference))[0]) < 1  # twice as loud: 0 dB, not high


def test_mixed_precision_gives_float32_audio():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        out = build_denoiser(CFG)(tf.random.normal([1, 4000], seed=6))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert out.dtype == tf.float32 and bool(tf.reduce_all(tf.math.is_finite(out)))


def test_the_whole_model_builds_with_it_as_the_front_end():
    config = load_config(None, ["trainer.backbone=logmel_cnn", "trainer.denoiser.enabled=true",
                                "trainer.denoiser.design=dtln", "trainer.objective=denoise",
                                "trainer.denoise_loss=snr"])
    built = model_lib.build_model(config.trainer, config.features, num_classes=3)
    assert isinstance(built.denoiser, DTLN)
