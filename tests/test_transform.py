"""The Transform module: WAV decoding, crop/pad, per-utterance normalization,
log-mel with full-pass normalization (run with tf.Transform's own Beam impl),
the label vocabulary, and SpecAugment."""
import io
import tempfile

import numpy as np
import pytest
import soundfile
import tensorflow as tf
import tensorflow_transform.beam as tft_beam
from tensorflow_transform.tf_metadata import dataset_metadata, schema_utils

from components import features
from components.audio import wav_io
from components.audio.snr import snr_db
from components.config import FeatureConfig, SpecAugmentConfig
from components.transform import preprocessing
from tests.audio_helpers import tone


def _wav(samples):
    return wav_io.encode_pcm16_wav(np.asarray(samples, np.float32))


def test_decode_waveform_pads_and_normalizes_each_utterance():
    short = 0.5 * tone(0.25, 300) + 0.1  # offset and quiet: normalization removes both
    long = tone(1.0, 500)
    decoded = preprocessing.decode_waveform(tf.constant([_wav(short), _wav(long)]), 16000)
    out, lengths = decoded[features.WAVEFORM].numpy(), decoded[features.NUM_SAMPLES]
    assert out.shape == (2, 16000)
    assert list(lengths.numpy()) == [4000, 16000]
    valid = out[0, :4000]
    assert valid.mean() == pytest.approx(0.0, abs=1e-3)
    assert valid.std() == pytest.approx(1.0, abs=1e-2)
    assert np.all(out[0, 4000:] == 0.0)  # zero padding after the utterance
    assert out[1].std() == pytest.approx(1.0, abs=1e-2)  # the whole window, no padding
    # The normalization can be undone (serve_wav does, for the enhanced audio).
    restored = valid * decoded[features.WAVEFORM_STD][0].numpy() + decoded[features.WAVEFORM_MEAN][0].numpy()
    np.testing.assert_allclose(restored, short, atol=1e-4)


def _wav_other_header(samples):
    """The same PCM16 samples behind a header with a LIST chunk: not the canonical 44 bytes."""
    buf = io.BytesIO()
    with soundfile.SoundFile(buf, "w", 16000, 1, subtype="PCM_16", format="WAV") as f:
        f.title = "a LIST INFO chunk before the data"
        f.write(np.asarray(samples, np.float32))
    return buf.getvalue()


def test_the_batch_read_of_canonical_wavs_gives_decode_wavs_samples():
    rng = np.random.default_rng(3)
    clips = [np.clip(0.3 * rng.standard_normal(n), -1, 1) for n in (16000, 9001, 1)]
    canonical = [_wav(c) for c in clips]
    other = [_wav_other_header(c) for c in clips]
    assert all(len(w) == 44 + 2 * len(c) for w, c in zip(canonical, clips))
    assert all(len(w) > 44 + 2 * len(c) for w, c in zip(other, clips))
    expected = np.zeros([3, 16000], np.float32)
    for i, wav in enumerate(canonical):
        audio = tf.audio.decode_wav(wav, desired_channels=1).audio[:, 0].numpy()
        expected[i, :audio.size] = audio
    assert list(preprocessing.is_canonical_pcm16(tf.constant(canonical)).numpy()) == [True] * 3
    odd = canonical[0] + b"x"  # a byte past the data size
    streamed = canonical[1][:40] + b"\xff\xff\xff\xff" + canonical[1][44:]  # size unknown when written
    assert not any(preprocessing.is_canonical_pcm16(tf.constant(other + [odd, streamed, b"RIFF", b""])).numpy())
    for batch in (canonical, other, canonical[:2] + other[2:]):  # the batch read, clip by clip, mixed
        audio, lengths = preprocessing.decode_batch(tf.constant(batch), 16000)
        np.testing.assert_array_equal(audio.numpy(), expected)
        assert list(lengths.numpy()) == [16000, 9001, 1]


@pytest.mark.parametrize("header", ["canonical", "other"])
def test_audio_longer_than_the_window_is_refused_not_cropped(header):
    wav = _wav if header == "canonical" else _wav_other_header
    with pytest.raises(tf.errors.InvalidArgumentError, match="longer than the model's window of 16000 samples"):
        preprocessing.decode_waveform(tf.constant([wav(tone(1.0, 300)), wav(tone(1.01, 300))]), 16000)


def test_audio_at_another_sample_rate_is_refused_not_misread():
    buf = io.BytesIO()
    soundfile.write(buf, tone(0.5, 440, rate=8000), 8000, subtype="PCM_16", format="WAV")
    with pytest.raises(tf.errors.InvalidArgumentError, match="expected 16000 Hz WAV audio"):
        preprocessing.decode_waveform(tf.constant([buf.getvalue()]), 16000)


def test_clean_reference_shares_the_noisy_scale_so_snr_is_preserved():
    rng = np.random.default_rng(1)
    clean = 0.2 * tone(0.5, 440) + 0.05
    noise = 0.05 * rng.standard_normal(clean.size)
    noisy = clean + noise
    decoded = preprocessing.decode_waveform(tf.constant([_wav(noisy)]), 16000, tf.constant([_wav(clean)]))
    n = clean.size
    noisy_n, clean_n = decoded[features.WAVEFORM][0].numpy(), decoded[features.CLEAN_WAVEFORM][0].numpy()
    assert np.all(clean_n[n:] == 0.0)
    # Both are shifted by the noisy utterance's mean, then scaled: the SNR is that of
    # the shifted pair (which also removes the DC offset here).
    offset = noisy.mean()
    assert snr_db(clean_n[:n], noisy_n[:n]) == pytest.approx(snr_db(clean - offset, noisy - offset), abs=0.05)


def test_snr_bucket_names_follow_the_configured_edges():
    snr = tf.constant([-3.0, 0.0, 4.9, 5.0, 12.0, 20.0, 7.0, float("nan")])
    has_clean = tf.constant([True] * 6 + [False, True])
    buckets = preprocessing.snr_bucket(snr, has_clean, [0.0, 5.0, 10.0, 20.0]).numpy().tolist()
    assert [b.decode() for b in buckets] == [
        "<0", "0-5", "0-5", "5-10", "10-20", ">=20", features.NO_REFERENCE, features.NO_REFERENCE]


def test_an_fft_shorter_than_the_frame_is_refused():
    with pytest.raises(ValueError, match="fft_length 256 is shorter than features.frame_length 400"):
        FeatureConfig(fft_length=256)


def test_log_mel_is_that_of_tf_signal_stft():
    cfg = FeatureConfig(clip_seconds=0.5)
    waveform = tf.random.stateless_normal([3, cfg.num_samples], [1, 2])
    stft = tf.signal.stft(waveform, cfg.frame_length, cfg.frame_step, cfg.fft_length)
    mel_matrix = tf.signal.linear_to_mel_weight_matrix(
        cfg.num_mel_bins, cfg.fft_length // 2 + 1, features.SAMPLE_RATE, cfg.lower_hz, cfg.upper_hz)
    expected = tf.math.log(tf.tensordot(tf.abs(stft) ** 2, mel_matrix, axes=1) + 1e-6)
    np.testing.assert_allclose(preprocessing.log_mel(waveform, cfg).numpy(), expected.numpy(), atol=1e-4)


def test_log_mel_has_the_configured_frames_and_bins():
    cfg = FeatureConfig()
    mel = preprocessing.log_mel(tf.random.normal([3, cfg.num_samples]), cfg)
    assert mel.shape == (3, cfg.num_frames, cfg.num_mel_bins) == (3, 98, 64)
    assert np.all(np.isfinite(mel.numpy()))


def test_preprocessing_fn_normalizes_over_the_full_pass_and_maps_labels():
    raw_spec = {features.AUDIO: tf.io.FixedLenFeature([1], tf.string),
                features.LABEL: tf.io.FixedLenFeature([1], tf.string),
                features.CLEAN_AUDIO: tf.io.VarLenFeature(tf.string),
                features.SNR_DB: tf.io.VarLenFeature(tf.float32)}
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(raw_spec))
    rng = np.random.default_rng(0)
    data = [{features.AUDIO: [_wav(tone(0.5, f) + 0.01 * rng.standard_normal(8000))],
             features.LABEL: [label], features.CLEAN_AUDIO: [], features.SNR_DB: []}
            for f, label in [(200, b"low"), (250, b"low"), (3000, b"high"), (3500, b"high"), (3200, b"high")]]
    data[1][features.CLEAN_AUDIO] = [_wav(tone(0.5, 250))]  # the second one has a clean reference
    data[1][features.SNR_DB] = [7.5]
    custom_config = {"config": {"features": {"clip_seconds": 0.5, "num_mel_bins": 32}}}
    with tft_beam.Context(temp_dir=tempfile.mkdtemp()):
        (transformed, transformed_metadata), transform_fn = (
            (data, metadata) | tft_beam.AnalyzeAndTransformDataset(
                lambda inputs: preprocessing.preprocessing_fn(inputs, custom_config)))
    mel = np.stack([t[features.LOG_MEL] for t in transformed])
    assert mel.shape == (5, 48, 32)
    per_bin = mel.reshape(-1, 32)
    np.testing.assert_allclose(per_bin.mean(axis=0), 0.0, atol=1e-3)
    np.testing.assert_allclose(per_bin.std(axis=0), 1.0, atol=1e-2)
    ids = [int(t[features.LABEL_ID]) for t in transformed]
    # tft orders the vocabulary by frequency: "high" (3) is 0, "low" (2) is 1.
    assert ids == [1, 1, 0, 0, 0]
    assert [int(t[features.HAS_CLEAN]) for t in transformed] == [0, 1, 0, 0, 0]
    assert [t[features.SNR_BUCKET] for t in transformed] == [
        features.NO_REFERENCE.encode(), b"5-10"] + [features.NO_REFERENCE.encode()] * 3
    assert not np.any(transformed[0][features.CLEAN_WAVEFORM])  # no reference: zeros
    assert snr_db(transformed[1][features.CLEAN_WAVEFORM], transformed[1][features.WAVEFORM]) > 20


def _augment_one(mel, cfg, seed=None):
    """SpecAugment of one [frames, bins] example: a batch of one."""
    return preprocessing.spec_augment_batch(mel[tf.newaxis], cfg, None if seed is None else seed[tf.newaxis])[0]


def test_spec_augment_masks_bands_within_the_configured_widths():
    cfg = SpecAugmentConfig(freq_masks=1, freq_mask_width=8, time_masks=1, time_mask_width=10)
    mel = tf.ones([98, 64])
    widths = []
    for _ in range(50):
        out = _augment_one(mel, cfg).numpy()
        zero_cols = np.where((out == 0).all(axis=0))[0]
        zero_rows = np.where((out == 0).all(axis=1))[0]
        assert len(zero_cols) <= 8 and len(zero_rows) <= 10
        if len(zero_cols):
            assert np.all(np.diff(zero_cols) == 1)  # one contiguous band
        masked = (out == 0)
        expected = np.zeros_like(masked)
        expected[:, zero_cols] = True
        expected[zero_rows, :] = True
        np.testing.assert_array_equal(masked, expected)  # nothing but whole bands is masked
        widths.append((len(zero_cols), len(zero_rows)))
    assert len(set(widths)) > 5  # fresh masks on every call


def test_spec_augment_masks_are_a_function_of_the_seed():
    cfg = SpecAugmentConfig(freq_masks=2, freq_mask_width=8, time_masks=2, time_mask_width=10)
    mel = tf.ones([98, 64])
    masks = [_augment_one(mel, cfg, tf.constant([7, k], tf.int64)).numpy() == 0 for k in range(8)]
    again = _augment_one(mel, cfg, tf.constant([7, 3], tf.int64)).numpy() == 0
    np.testing.assert_array_equal(again, masks[3])  # same seed, same masks
    assert len({m.tobytes() for m in masks}) > 4  # other seeds, other masks


def test_a_batch_is_augmented_example_by_example_as_its_seeds_say():
    cfg = SpecAugmentConfig(freq_masks=2, freq_mask_width=8, time_masks=2, time_mask_width=10)
    mel = tf.random.stateless_normal([6, 98, 64], [3, 4]) + 5.0  # no cell is 0 before masking
    seeds = tf.constant([[7, k] for k in range(6)], tf.int64)
    batch = preprocessing.spec_augment_batch(mel, cfg, seeds).numpy()
    for k in range(6):
        np.testing.assert_array_equal(batch[k], _augment_one(mel[k], cfg, seeds[k]).numpy())
    assert len({(b == 0).tobytes() for b in batch}) == 6  # each example under masks of its own
    assert 0 < (batch == 0).mean() < 0.5


def test_spec_augment_time_masks_never_exceed_the_ratio_p():
    cfg = SpecAugmentConfig(freq_masks=0, time_masks=3, time_mask_width=100, time_mask_max_ratio=0.05)
    for _ in range(20):
        out = _augment_one(tf.ones([40, 16]), cfg).numpy()
        zero_rows = np.where((out == 0).all(axis=1))[0]
        assert len(zero_rows) <= 3 * 2  # each of 3 masks at most 0.05 * 40 = 2 frames
