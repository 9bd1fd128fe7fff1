"""Rooms and calls on the training stream: what each does to a noisy/clean pair."""
import numpy as np
import pyroomacoustics as pra
import pytest
import scipy.signal
import tensorflow as tf

from components import features
from components.config import AugmentConfig
from components.training import augment

SR = features.SAMPLE_RATE
N = SR  # one-second examples


def _pair(batch=4, valid=(N, N, 12000, 8000)):
    rng = np.random.default_rng(0)
    t = np.arange(N) / SR
    clean = np.stack([np.sin(2 * np.pi * (500 + 300 * b) * t) * (1 + np.sin(2 * np.pi * 3 * t)) for b in range(batch)])
    noise = rng.standard_normal((batch, N))
    mask = np.arange(N)[None, :] < np.array(valid)[:, None]
    scale = np.sqrt((((clean + noise) * mask) ** 2).sum(1, keepdims=True) / mask.sum(1, keepdims=True))
    return ((clean + noise) * mask / scale).astype(np.float32), (clean * mask / scale).astype(np.float32), \
        np.array(valid, np.int64)


def _seeds(batch=4, start=0):
    return tf.constant([[7, start + b] for b in range(batch)], tf.int64)


def _out_of_band(x):
    spectrum = np.abs(np.fft.rfft(x, axis=1)) ** 2
    hz = np.fft.rfftfreq(x.shape[1], 1 / SR)
    outside = (hz < 250) | (hz > 3500)
    return spectrum[:, outside].sum(1) / spectrum.sum(1)


def test_a_call_band_limits_codes_and_drops_packets_of_noisy_and_clean_alike():
    noisy, clean, valid = _pair()
    cfg = AugmentConfig(phone_probability=1.0, max_dropout=0.3)
    out_noisy, out_clean, lengths = (t.numpy() for t in augment.augment_waveforms(noisy, clean, valid, _seeds(), cfg,
                                                                                  None))
    np.testing.assert_array_equal(lengths, valid)  # a call keeps the length
    full = valid == N  # (a shorter example's cut at its end is broadband again)
    assert (_out_of_band(out_noisy[full]) < 1e-6).all() and (_out_of_band(out_clean[full]) < 1e-6).all()
    assert (_out_of_band(noisy[full]) > 0.2).all()  # white noise in: the band is what changed it
    for b, n in enumerate(valid):
        assert not out_noisy[b, n:].any() and not out_clean[b, n:].any()  # padding stays zero
        assert np.sqrt(np.mean(out_noisy[b, :n] ** 2)) == pytest.approx(1.0, rel=1e-3)  # normalized again
    # the same lost packets in both: where the noisy call goes quiet for 20 ms, so does the clean
    def frame_rms(x, b):
        frames = np.sqrt(np.mean(x[b, :valid[b]].reshape(-1, 320) ** 2, axis=1))
        return frames / np.median(frames)
    lost = [frame_rms(out_noisy, b) < 0.1 for b in range(2)]
    assert sum(x.sum() for x in lost) >= 3, lost
    for b in range(2):
        clean_frames = frame_rms(out_clean, b)
        assert (clean_frames[lost[b]] < 0.1 * clean_frames.max()).all()


def test_no_reference_stays_no_reference_and_zero_probabilities_change_nothing():
    noisy, clean, valid = _pair()
    cfg = AugmentConfig(phone_probability=1.0, reverb_probability=1.0, rir_count=2)
    rirs = tf.constant(augment.room_impulse_responses(cfg, seed=0))
    _, out_clean, _ = augment.augment_waveforms(noisy, np.zeros_like(clean), valid, _seeds(), cfg, rirs)
    assert not out_clean.numpy().any()
    same_noisy, same_clean, same_lengths = augment.augment_waveforms(noisy, clean, valid, _seeds(), AugmentConfig(),
                                                                     rirs)
    np.testing.assert_array_equal(same_lengths, valid)
    np.testing.assert_allclose(same_noisy, noisy, atol=1e-4)
    np.testing.assert_allclose(same_clean, clean, atol=1e-4)


def test_a_room_reverberates_the_pair_linearly_with_one_of_its_simulated_responses():
    cfg = AugmentConfig(reverb_probability=1.0, rir_count=3, rt60_range_s=[0.3, 0.5])
    rirs = augment.room_impulse_responses(cfg, seed=0)
    np.testing.assert_array_equal(rirs, augment.room_impulse_responses(cfg, seed=0))  # seeded
    assert rirs.shape[0] == 3 and np.allclose((rirs ** 2).sum(1), 1.0, rtol=1e-4)
    # the direct path first, with the whole of its fractional-delay filter before it
    assert np.argmax(np.abs(rirs), axis=1).tolist() == [pra.constants.get("frac_delay_length") // 2] * 3
    noisy, clean, valid = _pair(valid=(N,) * 4)
    out_noisy, out_clean, _ = (t.numpy() for t in augment.augment_waveforms(noisy, clean, valid, _seeds(), cfg,
                                                                           tf.constant(rirs)))
    # Linear: the noise part of the output is the room's response to the noise part alone.
    for b in range(4):
        matches = []
        for h in rirs:
            wet = np.convolve(noisy[b], h)[:N]
            matches.append(np.abs(wet / np.sqrt(np.mean(wet ** 2)) - out_noisy[b]).max())
        assert min(matches) < 1e-3, matches
        wet_clean = [np.convolve(clean[b], h)[:N] for h in rirs][int(np.argmin(matches))]
        np.testing.assert_allclose(out_clean[b], wet_clean / np.sqrt(np.mean(np.convolve(
            noisy[b], rirs[int(np.argmin(matches))])[:N] ** 2)), atol=1e-3)


def test_short_reverberation_in_a_large_room_is_drawn_again_not_a_crash():
    # pyroomacoustics cannot make a large room this dry (inverse_sabine raises); most of
    # these draws are such rooms.
    cfg = AugmentConfig(reverb_probability=1.0, rir_count=8, rt60_range_s=[0.1, 0.11])
    assert augment.room_impulse_responses(cfg, seed=1).shape[0] == 8


@pytest.mark.parametrize("factor", [1.25, 0.8])
def test_a_speed_change_scales_pitch_and_length_of_noisy_and_clean_alike(factor):
    noisy, clean, valid = _pair()
    cfg = AugmentConfig(speed_probability=1.0, speed_factors=[factor])
    out_noisy, out_clean, lengths = (t.numpy() for t in augment.augment_waveforms(noisy, clean, valid, _seeds(), cfg,
                                                                                  None))
    np.testing.assert_array_equal(lengths, np.minimum(np.round(valid / factor), N))
    hz = np.fft.rfftfreq(N, 1 / SR)
    for b in range(4):
        assert not out_noisy[b, lengths[b]:].any() and not out_clean[b, lengths[b]:].any()
        tone = hz[np.argmax(np.abs(np.fft.rfft(out_clean[b])))]
        assert tone == pytest.approx((500 + 300 * b) * factor, abs=2.0)
        # One resampling, one scale for both: the noise part is the resampled noise alone.
        noise = scipy.signal.resample(noisy[b] - clean[b], int(round(N / factor)))[:N]
        noise = np.pad(noise, (0, N - len(noise)))
        noise[lengths[b]:] = 0
        residual = out_noisy[b] - out_clean[b]
        gain = residual @ noise / (noise @ noise)
        assert np.abs(residual - gain * noise)[:lengths[b] - 200].max() < 1e-2 * np.abs(residual).max()
        assert np.sqrt(np.mean(out_noisy[b, :lengths[b]] ** 2)) == pytest.approx(1.0, rel=1e-3)


def test_draws_are_the_seeds_alone():
    noisy, clean, valid = _pair()
    cfg = AugmentConfig(phone_probability=0.5, max_dropout=0.2)
    first = augment.augment_waveforms(noisy, clean, valid, _seeds(), cfg, None)[0].numpy()
    again = augment.augment_waveforms(noisy, clean, valid, _seeds(), cfg, None)[0].numpy()
    other = augment.augment_waveforms(noisy, clean, valid, _seeds(start=100), cfg, None)[0].numpy()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_the_training_stream_carries_each_example_s_new_length_to_the_model():
    from components.config import TrainerConfig
    from components.training import input_pipeline

    cfg = TrainerConfig(backbone="wav2vec2", augment=AugmentConfig(speed_probability=1.0, speed_factors=[1.25]))
    noisy, clean, valid = _pair()
    batch = {features.WAVEFORM: tf.constant(noisy), features.CLEAN_WAVEFORM: tf.constant(clean),
             features.NUM_SAMPLES: tf.constant(valid)}
    out = input_pipeline.augmenter(cfg)(tf.zeros([4], tf.int64), tf.range(4, dtype=tf.int64), batch)
    assert out[features.NUM_SAMPLES].dtype == tf.int64
    np.testing.assert_array_equal(out[features.NUM_SAMPLES], np.round(valid / 1.25))


def test_placement_moves_a_short_clip_to_a_drawn_offset_where_it_fits_and_leaves_a_full_one():
    """Words anywhere in the window: the valid samples of noisy and clean move together, unchanged, to an
    offset inside the window's free room (zeros before); the offsets differ by seed and cover the room."""
    noisy, clean, valid = _pair(valid=(N, 4000, 12000, 8000))
    offsets = {1: set(), 2: set(), 3: set()}
    for start in range(0, 400, 4):
        out_noisy, out_clean, lengths = (t.numpy() for t in augment.place(noisy, clean, valid, _seeds(start=start),
                                                                          1.0))
        np.testing.assert_array_equal(out_noisy[0], noisy[0])  # no room: as it was
        for b in (1, 2, 3):
            offset = lengths[b] - valid[b]
            assert 0 <= offset <= N - valid[b]
            offsets[b].add(int(offset))
            for out, original in ((out_noisy, noisy), (out_clean, clean)):
                assert not out[b, :offset].any() and not out[b, lengths[b]:].any()
                np.testing.assert_array_equal(out[b, offset:lengths[b]], original[b, :valid[b]])
    for b, seen in offsets.items():  # the draws reach both ends of the room
        assert min(seen) < 0.05 * (N - valid[b]) and max(seen) > 0.95 * (N - valid[b])


def test_the_training_stream_places_before_the_call_and_its_draws_leave_the_call_s_as_they_were():
    from components.config import TrainerConfig
    from components.training import input_pipeline

    noisy, clean, valid = _pair(valid=(N, 4000, 12000, 8000))
    batch = {features.WAVEFORM: tf.constant(noisy), features.CLEAN_WAVEFORM: tf.constant(clean),
             features.NUM_SAMPLES: tf.constant(valid)}
    call = AugmentConfig(phone_probability=0.5, max_dropout=0.2)
    outs = [input_pipeline.augmenter(TrainerConfig(backbone="wav2vec2", augment=a))(
        tf.zeros([4], tf.int64), tf.range(4, dtype=tf.int64), batch)
        for a in (call, AugmentConfig(phone_probability=0.5, max_dropout=0.2, placement_probability=1.0))]
    np.testing.assert_array_equal(outs[1][features.WAVEFORM][0], outs[0][features.WAVEFORM][0])  # the same call
    assert (outs[1][features.NUM_SAMPLES].numpy()[1:] > valid[1:]).any()  # and the short clips moved
