"""The denoiser front end: STFT -> mask estimator (conv + bidirectional GRU) -> masked
complex spectrum -> inverse STFT, giving an enhanced waveform of the input's length.

Works on any batch of [B, samples] waveforms of any length. The STFT and inverse
STFT run in float32 whatever the mixed-precision policy; the estimator's layers
follow the policy, and the mask is cast back to float32. The mask starts near 1
(output bias `init_mask_logit`), so an untrained denoiser passes audio through.
Also here: the batched, length-masked negative SI-SNR loss of the joint objective.
"""
from __future__ import annotations

import tensorflow as tf
import tf_keras as keras

from components.config import DenoiserConfig

_EPS = 1e-8


class Denoiser(keras.Model):
    def __init__(self, cfg: DenoiserConfig, **kwargs):
        super().__init__(name="denoiser", **kwargs)
        self.cfg = cfg
        bins = cfg.fft_length // 2 + 1
        # Learned normalization of the log-power bins (as PANNs' bn0): the input level varies.
        self.norm = keras.layers.BatchNormalization(axis=-1, momentum=0.9, name="input_norm")
        self.conv = keras.layers.Conv1D(cfg.channels, cfg.kernel_size, padding="same",
                                        activation="relu", name="conv")
        self.rnn = keras.layers.Bidirectional(
            keras.layers.GRU(cfg.gru_units, return_sequences=True), name="bigru")
        self.to_mask = keras.layers.Dense(
            bins, activation="sigmoid", dtype="float32", name="mask",
            bias_initializer=keras.initializers.Constant(cfg.init_mask_logit))

    def _pad(self) -> int:
        return self.cfg.frame_length - self.cfg.frame_step  # every sample gets full window overlap

    def spectrum(self, waveform: tf.Tensor) -> tf.Tensor:
        """[B, samples] -> complex [B, frames, bins], padded so the inverse is exact."""
        padded = tf.pad(tf.cast(waveform, tf.float32), [[0, 0], [self._pad(), self._pad()]])
        return tf.signal.stft(padded, self.cfg.frame_length, self.cfg.frame_step, self.cfg.fft_length,
                              pad_end=True)

    def waveform(self, spectrum: tf.Tensor, num_samples: tf.Tensor) -> tf.Tensor:
        """Inverse of `spectrum`: complex [B, frames, bins] -> [B, num_samples]."""
        audio = tf.signal.inverse_stft(
            spectrum, self.cfg.frame_length, self.cfg.frame_step, self.cfg.fft_length,
            window_fn=tf.signal.inverse_stft_window_fn(self.cfg.frame_step))
        return audio[:, self._pad():self._pad() + num_samples]

    def mask(self, spectrum: tf.Tensor, training: bool = False) -> tf.Tensor:
        """The estimated magnitude mask in [0, 1], float32 [B, frames, bins]."""
        log_power = tf.math.log(tf.square(tf.abs(spectrum)) + 1e-6)
        x = self.norm(tf.cast(log_power, self.compute_dtype), training=training)
        x = self.rnn(self.conv(x), training=training)
        return tf.cast(self.to_mask(x), tf.float32)

    def call(self, waveform: tf.Tensor, training: bool = False) -> tf.Tensor:
        spectrum = self.spectrum(waveform)
        mask = self.mask(spectrum, training=training)
        # Real and imaginary parts scaled apart: no complex cast in the gradient.
        masked = tf.complex(tf.math.real(spectrum) * mask, tf.math.imag(spectrum) * mask)
        return self.waveform(masked, tf.shape(waveform)[1])


def si_snr(reference: tf.Tensor, estimate: tf.Tensor, valid: tf.Tensor) -> tf.Tensor:
    """Per-example SI-SNR in dB over the valid samples: [B, T] x [B, T] x [B, T] 0/1 -> [B].

    The tf twin of `snr_metrics.si_snr_db` for the training loss (tests compare the
    two); the eps keeps it finite on silent or perfect cases, which only the loss sees."""
    valid = tf.cast(valid, tf.float32)
    count = tf.maximum(tf.reduce_sum(valid, axis=-1, keepdims=True), 1.0)
    reference = tf.cast(reference, tf.float32) * valid
    estimate = tf.cast(estimate, tf.float32) * valid
    reference = (reference - tf.reduce_sum(reference, -1, keepdims=True) / count) * valid
    estimate = (estimate - tf.reduce_sum(estimate, -1, keepdims=True) / count) * valid
    scale = tf.reduce_sum(estimate * reference, -1, keepdims=True) / (
        tf.reduce_sum(reference * reference, -1, keepdims=True) + _EPS)
    target = scale * reference
    noise = estimate - target
    ratio = (tf.reduce_sum(target * target, -1) + _EPS) / (tf.reduce_sum(noise * noise, -1) + _EPS)
    return 10.0 * tf.math.log(ratio) / tf.math.log(10.0)
