"""Transform module: raw WAV bytes -> normalized log-mel features, plus SpecAugment.

TFX's Transform calls `preprocessing_fn`. Everything in the Transform graph uses
core TF ops only (tf.audio.decode_wav, tf.signal), because TF Serving must load
it; tensorflow-io's audio ops are custom ops and stay out.
`spec_augment` is applied by the Trainer to the training stream only.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import tensorflow as tf
import tensorflow_transform as tft

from components import features
from components.config import FeatureConfig, SpecAugmentConfig

_EPS = 1e-6


def _dense(tensor: Any, default: Any) -> tf.Tensor:
    """A [B] dense tensor from a FixedLen [B, 1] tensor or a VarLen SparseTensor."""
    if isinstance(tensor, tf.sparse.SparseTensor):
        batch = tensor.dense_shape[0]
        tensor = tf.sparse.to_dense(tf.sparse.reset_shape(tensor, [batch, 1]), default_value=default)
    return tf.reshape(tensor, [-1])


def decode_16k(wav: tf.Tensor) -> tf.Tensor:
    """One WAV (bytes) -> [samples] float32 mono; fails, saying so, unless it is 16 kHz
    (the ExampleGen always writes 16 kHz; serving clients must send it)."""
    decoded = tf.audio.decode_wav(wav, desired_channels=1)
    check = tf.debugging.assert_equal(
        decoded.sample_rate, tf.constant(features.SAMPLE_RATE, tf.int32),
        message=f"expected {features.SAMPLE_RATE} Hz WAV audio")
    with tf.control_dependencies([check]):
        return tf.identity(decoded.audio[:, 0])


def normalize(audio: tf.Tensor, valid: Optional[tf.Tensor] = None):
    """(normalized, mean, std): zero mean and unit variance over the valid samples of the
    last axis (all of them by default), zeros elsewhere; mean and std keep that axis as 1.
    The one normalization of the Transform, the model's enhanced audio and serving."""
    valid = tf.ones_like(audio) if valid is None else tf.cast(valid, audio.dtype)
    count = tf.maximum(tf.reduce_sum(valid, -1, keepdims=True), 1.0)
    mean = tf.reduce_sum(audio * valid, -1, keepdims=True) / count
    std = tf.sqrt(tf.reduce_sum(tf.square(audio - mean) * valid, -1, keepdims=True) / count + 1e-8)
    return (audio - mean) / std * valid, mean, std


def decode_waveform(wav_bytes: tf.Tensor, num_samples: int,
                    reference_bytes: Optional[tf.Tensor] = None) -> Dict[str, tf.Tensor]:
    """[B] PCM16 WAV bytes -> {WAVEFORM [B, num_samples], NUM_SAMPLES, WAVEFORM_MEAN,
    WAVEFORM_STD}: zero-padded, each utterance normalized to zero mean and unit
    variance over its own samples (as Wav2Vec2FeatureExtractor does). Audio longer than
    `num_samples` is refused, never cropped unseen.

    With `reference_bytes` (clean references, same length), also CLEAN_WAVEFORM:
    the reference cropped and normalized with the *noisy* utterance's mean and std,
    so enhanced, noisy and clean share one scale: SNRs are those of the pair with the
    noisy utterance's mean (its DC offset, about 0 for speech) removed from both."""

    def pcm(wav: tf.Tensor):
        audio = decode_16k(wav)
        length = tf.shape(audio)[0]
        fits = tf.debugging.assert_less_equal(length, num_samples, message=(
            f"audio longer than the model's window of {num_samples} samples (features.clip_seconds): "
            f"it would be cropped. Cut recordings into windows (the ExampleGen does; for whole "
            f"recordings use components.recording)"))
        with tf.control_dependencies([fits]):
            return tf.pad(audio, [[0, num_samples - length]]), tf.cast(length, tf.int64)

    def decode(batch: tf.Tensor):
        audio, lengths = tf.map_fn(pcm, batch, fn_output_signature=(
            tf.TensorSpec([num_samples], tf.float32), tf.TensorSpec([], tf.int64)))
        return tf.ensure_shape(audio, [None, num_samples]), lengths

    audio, lengths = decode(wav_bytes)
    valid = tf.sequence_mask(lengths, num_samples, dtype=tf.float32)
    waveform, mean, std = normalize(audio, valid)
    result = {features.WAVEFORM: waveform, features.NUM_SAMPLES: lengths,
              features.WAVEFORM_MEAN: mean[:, 0], features.WAVEFORM_STD: std[:, 0]}
    if reference_bytes is not None:
        clean, _ = decode(reference_bytes)
        result[features.CLEAN_WAVEFORM] = (clean - mean) / std * valid
    return result


def snr_bucket_names(edges: Sequence[float]) -> List[str]:
    """Bucket names for edges [0, 5, 10, 20]: <0, 0-5, 5-10, 10-20, >=20."""
    return [f"<{edges[0]:g}"] + [f"{lo:g}-{hi:g}" for lo, hi in zip(edges, edges[1:])] + [f">={edges[-1]:g}"]


def snr_bucket(snr_db: tf.Tensor, has_clean: tf.Tensor, edges: Sequence[float]) -> tf.Tensor:
    """[B] input SNRs -> [B] bucket names (`snr_bucket_names`); NO_REFERENCE where
    there is no clean reference or no SNR."""
    names = snr_bucket_names(edges)
    index = tf.raw_ops.Bucketize(input=snr_db, boundaries=[float(e) for e in edges])
    known = has_clean & tf.math.is_finite(snr_db)
    return tf.where(known, tf.gather(tf.constant(names), index), features.NO_REFERENCE)


def log_mel(waveform: tf.Tensor, cfg: FeatureConfig) -> tf.Tensor:
    """[B, samples] -> [B, frames, mel bins] log-mel energies."""
    stft = tf.signal.stft(waveform, cfg.frame_length, cfg.frame_step, cfg.fft_length)
    mel_matrix = tf.signal.linear_to_mel_weight_matrix(
        cfg.num_mel_bins, cfg.fft_length // 2 + 1, features.SAMPLE_RATE, cfg.lower_hz, cfg.upper_hz)
    mel = tf.tensordot(tf.abs(stft) ** 2, mel_matrix, axes=1)
    return tf.math.log(mel + _EPS)


def _feature_config(custom_config: Dict[str, Any] | None) -> FeatureConfig:
    return FeatureConfig(**((custom_config or {}).get("config", {}).get("features", {})))


def preprocessing_fn(inputs: Dict[str, Any], custom_config: Dict[str, Any] | None = None) -> Dict[str, Any]:
    """TFX Transform entry point: waveforms (noisy and clean reference), log-mel
    normalized per mel bin over the full pass, the input-SNR bucket, the label id."""
    cfg = _feature_config(custom_config)
    audio = _dense(inputs[features.AUDIO], b"")
    if features.CLEAN_AUDIO in inputs:
        clean = _dense(inputs[features.CLEAN_AUDIO], b"")
        has_clean = tf.strings.length(clean) > 0
        clean = tf.where(has_clean, clean, audio)  # decodable; zeroed below
    else:  # a schema without clean references
        has_clean, clean = tf.zeros_like(audio, tf.bool), audio
    outputs = decode_waveform(audio, cfg.num_samples, clean)
    outputs[features.CLEAN_WAVEFORM] *= tf.cast(has_clean, tf.float32)[:, None]
    outputs[features.HAS_CLEAN] = tf.cast(has_clean, tf.int64)
    snr = _dense(inputs[features.SNR_DB], float("nan")) if features.SNR_DB in inputs else tf.fill(
        tf.shape(audio), float("nan"))
    outputs[features.SNR_BUCKET] = snr_bucket(snr, has_clean, cfg.snr_bucket_edges_db)
    mel = log_mel(outputs[features.WAVEFORM], cfg)
    per_bin = tf.reshape(mel, [-1, cfg.num_mel_bins])  # every frame is a sample of its bin
    mean = tft.mean(per_bin, reduce_instance_dims=False)
    var = tft.var(per_bin, reduce_instance_dims=False)
    outputs[features.LOG_MEL] = (mel - mean) / tf.sqrt(var + _EPS)
    if features.LABEL in inputs:
        outputs[features.LABEL_ID] = tft.compute_and_apply_vocabulary(
            _dense(inputs[features.LABEL], b""), vocab_filename=features.LABEL_VOCAB)
    return outputs


def spec_augment(mel: tf.Tensor, cfg: SpecAugmentConfig, seed: tf.Tensor | None = None) -> tf.Tensor:
    """SpecAugment time and frequency masking of one [frames, bins] example.

    The masks are stateless draws from `seed` (shape [2]): the same seed, the same masks
    (the Trainer seeds each example by (seed, epoch, index), so a resumed run draws what
    the uninterrupted one drew). Without a seed, one is drawn afresh on every call.
    Masked cells are set to 0, the normalized features' mean.
    """
    cfg = cfg.resolved()
    if seed is None:
        seed = tf.random.uniform([2], 0, tf.int64.max, dtype=tf.int64)
    frames, bins = tf.shape(mel)[0], tf.shape(mel)[1]
    seeds = iter(tf.unstack(tf.random.experimental.stateless_split(seed, 2 * (cfg.freq_masks + cfg.time_masks))))

    def draw(maxval):  # an integer in [0, maxval)
        return tf.random.stateless_uniform([], next(seeds), 0, maxval, tf.int32)

    keep = tf.ones_like(mel, dtype=tf.bool)
    for _ in range(cfg.freq_masks):
        width = draw(cfg.freq_mask_width + 1)
        start = draw(tf.maximum(bins - width, 0) + 1)
        cols = tf.range(bins)
        keep &= ~((cols >= start) & (cols < start + width))[tf.newaxis, :]
    max_time = tf.minimum(cfg.time_mask_width,
                          tf.cast(cfg.time_mask_max_ratio * tf.cast(frames, tf.float32), tf.int32))
    for _ in range(cfg.time_masks):
        width = draw(max_time + 1)
        start = draw(tf.maximum(frames - width, 0) + 1)
        rows = tf.range(frames)
        keep &= ~((rows >= start) & (rows < start + width))[:, tf.newaxis]
    return tf.where(keep, mel, tf.zeros_like(mel))
