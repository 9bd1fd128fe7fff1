"""Transform module: raw WAV bytes -> normalized log-mel features, plus SpecAugment.

TFX's Transform calls `preprocessing_fn`. Everything in the Transform graph uses
core TF ops only (tf.audio.decode_wav, tf.signal), because TF Serving must load
it; tensorflow-io's audio ops are custom ops and stay out.
`spec_augment` is applied by the Trainer to the training stream only.
"""
from __future__ import annotations

from typing import Any, Dict, Tuple

import tensorflow as tf
import tensorflow_transform as tft

from components import features
from pipeline.config import FeatureConfig, SpecAugmentConfig

_EPS = 1e-6


def _dense(tensor: Any, default: Any) -> tf.Tensor:
    """A [B] dense tensor from a FixedLen [B, 1] tensor or a VarLen SparseTensor."""
    if isinstance(tensor, tf.sparse.SparseTensor):
        batch = tensor.dense_shape[0]
        tensor = tf.sparse.to_dense(tf.sparse.reset_shape(tensor, [batch, 1]), default_value=default)
    return tf.reshape(tensor, [-1])


def decode_waveform(wav_bytes: tf.Tensor, num_samples: int) -> Tuple[tf.Tensor, tf.Tensor]:
    """[B] PCM16 WAV bytes -> ([B, num_samples] float32, [B] int64 valid lengths):
    cropped or zero-padded, each utterance normalized to zero mean and unit
    variance over its own samples (as Wav2Vec2FeatureExtractor does)."""

    def one(wav: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        audio = tf.audio.decode_wav(wav, desired_channels=1).audio[:, 0]
        audio = audio[:num_samples]
        mean, var = tf.nn.moments(audio, axes=[0])
        audio = (audio - mean) / tf.sqrt(var + 1e-8)
        length = tf.shape(audio, out_type=tf.int64)[0]
        return tf.pad(audio, [[0, num_samples - tf.shape(audio)[0]]]), length

    out, lengths = tf.map_fn(one, wav_bytes, fn_output_signature=(
        tf.TensorSpec([num_samples], tf.float32), tf.TensorSpec([], tf.int64)))
    return tf.ensure_shape(out, [None, num_samples]), lengths


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
    """TFX Transform entry point: log-mel normalized per mel bin over the full pass."""
    cfg = _feature_config(custom_config)
    waveform, lengths = decode_waveform(_dense(inputs[features.AUDIO], b""), cfg.num_samples)
    mel = log_mel(waveform, cfg)
    per_bin = tf.reshape(mel, [-1, cfg.num_mel_bins])  # every frame is a sample of its bin
    mean = tft.mean(per_bin, reduce_instance_dims=False)
    var = tft.var(per_bin, reduce_instance_dims=False)
    outputs = {features.LOG_MEL: (mel - mean) / tf.sqrt(var + _EPS),
               features.WAVEFORM: waveform, features.NUM_SAMPLES: lengths}
    if features.LABEL in inputs:
        outputs[features.LABEL_ID] = tft.compute_and_apply_vocabulary(
            _dense(inputs[features.LABEL], b""), vocab_filename=features.LABEL_VOCAB)
    return outputs


def spec_augment(mel: tf.Tensor, cfg: SpecAugmentConfig) -> tf.Tensor:
    """SpecAugment time and frequency masking of one [frames, bins] example.

    Draws fresh masks on every call, so a dataset map gives new masks per example
    per epoch. Masked cells are set to 0, the normalized features' mean.
    """
    cfg = cfg.resolved()
    frames, bins = tf.shape(mel)[0], tf.shape(mel)[1]
    keep = tf.ones_like(mel, dtype=tf.bool)
    for _ in range(cfg.freq_masks):
        width = tf.random.uniform([], 0, cfg.freq_mask_width + 1, dtype=tf.int32)
        start = tf.random.uniform([], 0, tf.maximum(bins - width, 0) + 1, dtype=tf.int32)
        cols = tf.range(bins)
        keep &= ~((cols >= start) & (cols < start + width))[tf.newaxis, :]
    max_time = tf.minimum(cfg.time_mask_width,
                          tf.cast(cfg.time_mask_max_ratio * tf.cast(frames, tf.float32), tf.int32))
    for _ in range(cfg.time_masks):
        width = tf.random.uniform([], 0, max_time + 1, dtype=tf.int32)
        start = tf.random.uniform([], 0, tf.maximum(frames - width, 0) + 1, dtype=tf.int32)
        rows = tf.range(frames)
        keep &= ~((rows >= start) & (rows < start + width))[:, tf.newaxis]
    return tf.where(keep, mel, tf.zeros_like(mel))
