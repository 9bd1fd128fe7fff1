"""Fresh background noise under the clean training examples (components/training/background.py,
`trainer.background`): noise over the whole valid span at the drawn SNR against the speech's own power,
only where there is no reference and the draw says so, the recording then the reference; seeded; and
carried by the training stream with placement before it."""
import os

import numpy as np
import pytest
import soundfile
import tensorflow as tf

from components import features
from components.config import AugmentConfig, BackgroundConfig, DenoiserConfig, TrainerConfig
from components.training import background, context, input_pipeline

SR = features.SAMPLE_RATE
N = 4000


def _noise_dir(tmp_path):
    rng = np.random.default_rng(0)
    os.makedirs(tmp_path / "hiss")
    soundfile.write(tmp_path / "hiss" / "a.wav", (0.1 * rng.standard_normal(SR)).astype(np.float32), SR,
                    subtype="FLOAT")
    return str(tmp_path)


def _speech(valid=(N, 2000, 3000, 1000)):
    rng = np.random.default_rng(1)
    wave = rng.standard_normal((len(valid), N)).astype(np.float32)
    wave *= (np.arange(N)[None, :] < np.array(valid)[:, None])
    return wave, np.array(valid, np.int64)


def _seeds(start=0, batch=4):
    return tf.constant([[7, start + b] for b in range(batch)], tf.int64)


@pytest.mark.parametrize("snr_db", [0.0, 10.0])
def test_noise_covers_the_valid_span_at_the_drawn_snr_only_where_there_is_no_reference(tmp_path, snr_db):
    cfg = BackgroundConfig(probability=1.0, noise_base=_noise_dir(tmp_path), snr_db_range=[snr_db, snr_db])
    mix = background.make_mixer(cfg, context.noise_bank(cfg.noise_base, N, 16))
    wave, valid = _speech()
    power = np.array([np.mean(w[:v] ** 2) for w, v in zip(wave, valid)], np.float32) * 4.0  # the speech's own
    has_clean = tf.constant([False, False, True, False])
    out, mixed = mix(_seeds(), tf.constant(wave), tf.constant(valid), tf.constant(power), has_clean)
    out, mixed = out.numpy(), mixed.numpy()
    np.testing.assert_array_equal(mixed, [True, True, False, True])
    np.testing.assert_array_equal(out[2], wave[2])  # it has a reference: left as it is
    for b in (0, 1, 3):
        noise = out[b] - wave[b]
        assert not noise[valid[b]:].any()  # nothing past the valid span
        assert (noise[:valid[b]] != 0).mean() > 0.99
        assert 10 * np.log10(power[b] / np.mean(noise[:valid[b]] ** 2)) == pytest.approx(snr_db, abs=1e-3)


def test_the_draws_pick_the_share_mixed_and_are_the_seeds_alone(tmp_path):
    cfg = BackgroundConfig(probability=0.5, noise_base=_noise_dir(tmp_path))
    mix = background.make_mixer(cfg, context.noise_bank(cfg.noise_base, N, 16))
    wave, valid = _speech((N,) * 64)
    args = (tf.constant(wave), tf.constant(valid), tf.ones([64]), tf.zeros([64], tf.bool))
    first, mixed = (t.numpy() for t in mix(_seeds(batch=64), *args))
    np.testing.assert_array_equal(first, mix(_seeds(batch=64), *args)[0].numpy())
    assert not np.array_equal(first, mix(_seeds(start=100, batch=64), *args)[0].numpy())
    assert 16 < mixed.sum() < 48


def test_the_training_stream_places_then_mixes_and_makes_the_recording_the_reference(tmp_path):
    cfg = TrainerConfig(backbone="logmel_cnn", objective="joint", denoiser=DenoiserConfig(enabled=True),
                        batch_size=4, augment=AugmentConfig(placement_probability=1.0),
                        background=BackgroundConfig(probability=1.0, noise_base=_noise_dir(tmp_path)))
    wave, valid = _speech()
    batch = {features.WAVEFORM: tf.constant(wave), features.NUM_SAMPLES: tf.constant(valid),
             features.CLEAN_WAVEFORM: tf.zeros([4, N]), features.HAS_CLEAN: tf.constant([0, 0, 0, 0], tf.int64)}
    out = input_pipeline.augmenter(cfg, N)(tf.zeros([4], tf.int64), tf.range(4, dtype=tf.int64), batch)
    lengths = out[features.NUM_SAMPLES].numpy()
    np.testing.assert_array_equal(out[features.HAS_CLEAN], [1, 1, 1, 1])
    noisy, clean = out[features.WAVEFORM].numpy(), out[features.CLEAN_WAVEFORM].numpy()
    for b in range(4):
        offset = lengths[b] - valid[b]
        # the reference is the placed recording (scaled as the noisy one is), the noise over its silence too
        scale = np.sqrt(np.mean(clean[b, offset:lengths[b]] ** 2) / np.mean(wave[b, :valid[b]] ** 2))
        np.testing.assert_allclose(clean[b, offset:lengths[b]], wave[b, :valid[b]] * scale, rtol=1e-4, atol=1e-5)
        assert not clean[b, :offset].any() and (noisy[b, :offset] != 0).all()
    assert (lengths > valid).any()


def test_background_needs_noise_and_a_model_that_reads_the_waveform():
    with pytest.raises(ValueError, match="background.probability > 0 needs trainer.background.noise_base"):
        TrainerConfig(background=BackgroundConfig(probability=0.8))
    with pytest.raises(ValueError, match="mixes noise into the waveform: the model must read it"):
        TrainerConfig(backbone="logmel_cnn", background=BackgroundConfig(probability=0.8, noise_base="n"))
