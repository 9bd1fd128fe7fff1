"""The denoiser's multi-second training sequences (components/training/context.py): the noise bank
read from a folder, sequences joined from a batch's clean references and one stretch of one
noise recording at a drawn SNR, seeded, and carried by the training stream to the model."""

import os

import numpy as np
import pytest
import soundfile
import tensorflow as tf

from components import features
from components.config import AugmentConfig, ContextConfig, DenoiserConfig, TrainerConfig
from components.training import context, input_pipeline

SR = features.SAMPLE_RATE
ROW = 1000  # samples per clip in these tests


def _noise_dir(tmp_path, seconds=(0.5, 0.05)):
    """Two kinds, one recording each: `hum` (a sine, 0.5 s) and `hiss` (noise, 0.05 s, shorter than a sequence)."""
    rng = np.random.default_rng(0)
    t = np.arange(int(seconds[0] * SR)) / SR
    for kind, audio in (("hum", 0.3 * np.sin(2 * np.pi * 97 * t)),
                        ("hiss", 0.1 * rng.standard_normal(int(seconds[1] * SR)))):
        os.makedirs(tmp_path / kind)
        soundfile.write(tmp_path / kind / f"{kind}_0.wav", audio.astype(np.float32), SR, subtype="FLOAT")
    return str(tmp_path)


def _cfg(noise_base, augment=None, **context_kw):
    return TrainerConfig(backbone="logmel_cnn", objective="joint", denoiser=DenoiserConfig(enabled=True),
                         batch_size=4, augment=augment or AugmentConfig(),
                         context=ContextConfig(noise_base=noise_base, **{"clips": 2, **context_kw}))


def _batch():
    clean = np.random.default_rng(1).standard_normal((4, ROW)).astype(np.float32)
    clean[:, ROW - 100:] = 0.0  # a clip's padding: a pause inside the joined sequence
    return {features.CLEAN_WAVEFORM: tf.constant(clean)}, clean


def _seeds(start=0):
    return tf.constant([[7, start + i] for i in range(4)], tf.int64)


def test_the_bank_holds_every_recording_looped_to_the_sequence_length(tmp_path):
    flat, starts, lengths = context.noise_bank(_noise_dir(tmp_path), 2 * ROW, max_mb=16)
    # Sorted by kind: hiss (800 samples, looped to 2000), then hum (8000, as it is).
    np.testing.assert_array_equal(lengths, [2 * ROW, 8000])
    np.testing.assert_array_equal(starts, [0, 2 * ROW])
    np.testing.assert_array_equal(flat[:800], flat[800:1600])  # the loop
    with pytest.raises(ValueError, match="max_noise_mb"):
        context.noise_bank(_noise_dir(tmp_path / "big", seconds=(20.0, 0.05)), 2 * ROW, max_mb=1)


def test_a_sequence_is_its_clips_clean_references_joined_plus_one_stretch_of_noise_at_the_drawn_snr(tmp_path):
    cfg = _cfg(_noise_dir(tmp_path), snr_db_range=[0.0, 10.0])
    bank = context.noise_bank(cfg.context.noise_base, 2 * ROW, cfg.context.max_noise_mb)
    batch, clean = _batch()
    out = context.make_sequences(cfg, bank, None)(_seeds(), batch)
    noisy_rows, clean_rows = out[features.CONTEXT_NOISY].numpy(), out[features.CONTEXT_CLEAN].numpy()
    assert noisy_rows.shape == clean_rows.shape == (4, ROW)
    flat = bank[0]
    for g in range(2):
        joined = clean[2 * g:2 * g + 2].reshape(-1)
        target, mixture = clean_rows[2 * g:2 * g + 2].reshape(-1), noisy_rows[2 * g:2 * g + 2].reshape(-1)
        scale = target[0] / joined[0]  # one level for the whole sequence (unit RMS of the mixture)
        np.testing.assert_allclose(target, joined * scale, rtol=1e-4, atol=1e-6)
        assert np.sqrt(np.mean(mixture ** 2)) == pytest.approx(1.0, rel=1e-3)
        noise = (mixture - target) / scale
        # One contiguous stretch of one recording of the bank, at a gain.
        corr = np.correlate(flat, noise / np.linalg.norm(noise), mode="valid") / np.sqrt(
            np.convolve(flat ** 2, np.ones(len(noise)), mode="valid") + 1e-12)
        assert corr.max() == pytest.approx(1.0, abs=1e-4)
        snr = 10 * np.log10(np.sum(joined ** 2) / np.sum(noise ** 2))
        assert 0.0 - 1e-3 <= snr <= 10.0 + 1e-3


def test_sequences_are_drawn_from_the_seeds_alone(tmp_path):
    cfg = _cfg(_noise_dir(tmp_path), augment=AugmentConfig(phone_probability=0.5))
    bank = context.noise_bank(cfg.context.noise_base, 2 * ROW, cfg.context.max_noise_mb)
    batch, _ = _batch()
    sequences = context.make_sequences(cfg, bank, None)
    first = sequences(_seeds(), batch)[features.CONTEXT_NOISY].numpy()
    np.testing.assert_array_equal(first, sequences(_seeds(), batch)[features.CONTEXT_NOISY].numpy())
    assert not np.array_equal(first, sequences(_seeds(start=50), batch)[features.CONTEXT_NOISY].numpy())


def test_the_training_stream_carries_the_sequences_to_the_model_and_the_loss(tmp_path):
    cfg = _cfg(_noise_dir(tmp_path))
    batch, clean = _batch()
    batch = {**batch, features.WAVEFORM: tf.constant(clean + 0.1), features.NUM_SAMPLES: tf.constant([ROW] * 4,
                                                                                                    tf.int64),
             features.LABEL_ID: tf.constant([0, 1, 0, 1], tf.int64), features.HAS_CLEAN: tf.ones([4], tf.int64)}
    out = input_pipeline.augmenter(cfg, ROW)(tf.zeros([4], tf.int64), tf.range(4, dtype=tf.int64), batch)
    x, y = input_pipeline.model_io(cfg, out)
    assert x[features.CONTEXT_NOISY].shape == y[features.CONTEXT_CLEAN].shape == (4, ROW)
    # The clips' own audio is left as it was: the sequences are beside it.
    np.testing.assert_array_equal(x[features.WAVEFORM], batch[features.WAVEFORM])
    np.testing.assert_array_equal(y[features.CLEAN_WAVEFORM], clean)


@pytest.mark.parametrize("change, message", [
    (dict(objective="classify", denoiser=DenoiserConfig(enabled=False)), "objective"),
    (dict(context=ContextConfig(clips=2)), "noise_base"),
    (dict(batch_size=6, context=ContextConfig(clips=4, noise_base="n")), "divide"),
    (dict(context=ContextConfig(clips=2, noise_base="n", snr_db_range=[10.0, 0.0])), "low above high"),
])
def test_bad_context_settings_are_refused_with_the_setting_named(change, message):
    settings = dict(backbone="logmel_cnn", objective="joint", denoiser=DenoiserConfig(enabled=True), batch_size=4,
                    context=ContextConfig(clips=2, noise_base="n"))
    with pytest.raises(ValueError, match=message):
        TrainerConfig(**{**settings, **change})


def test_a_second_noise_and_speech_level_changes_when_asked(tmp_path):
    noise_base = _noise_dir(tmp_path)
    bank = context.noise_bank(noise_base, 2 * ROW, 16)
    batch, clean = _batch()

    def mixture_and_target(**kw):
        out = context.make_sequences(_cfg(noise_base, snr_db_range=[0.0, 0.0], **kw), bank, None)(_seeds(), batch)
        return out[features.CONTEXT_NOISY].numpy(), out[features.CONTEXT_CLEAN].numpy()

    one_noisy, one_clean = mixture_and_target()
    two_noisy, two_clean = mixture_and_target(second_noise_probability=1.0)
    for g in range(2):  # the same speech, and noise at 0 dB twice over: its power doubles against the speech
        rows = slice(2 * g, 2 * g + 2)
        snr_one = 10 * np.log10(np.sum(one_clean[rows] ** 2) / np.sum((one_noisy[rows] - one_clean[rows]) ** 2))
        snr_two = 10 * np.log10(np.sum(two_clean[rows] ** 2) / np.sum((two_noisy[rows] - two_clean[rows]) ** 2))
        assert snr_one == pytest.approx(0.0, abs=1e-2)
        assert -6.03 < snr_two < -1.0  # two stretches at 0 dB: -3 dB apart, -6 dB if the same one is drawn twice
    _, leveled = mixture_and_target(speech_level_db=6.0)
    # Each clip scaled on its own: the clip-to-clip level ratios change, by at most 12 dB, and not all alike.
    ratios = [20 * np.log10(np.linalg.norm(leveled[i]) / np.linalg.norm(leveled[i + 1])
                            * np.linalg.norm(clean[i + 1]) / np.linalg.norm(clean[i])) for i in (0, 2)]
    assert all(abs(r) <= 12.0 + 1e-3 for r in ratios) and max(abs(r) for r in ratios) > 0.1
