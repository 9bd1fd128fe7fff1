"""The denoiser front end: STFT -> mask estimator (conv + bidirectional GRU) -> masked
complex spectrum -> inverse STFT, giving an enhanced waveform of the input's length.
The mask (`denoiser.mask`) is a real gain in [0, 1] per bin, or a complex gain whose
magnitude is tanh-bounded (DCCRN's "E" mask, Hu et al. 2020), which can also turn the phase.

Works on any batch of [B, samples] waveforms of any length. The STFT and inverse
STFT run in float32 whatever the mixed-precision policy; the estimator's layers
follow the policy, and the mask is cast back to float32. The mask starts near 1
(output bias `init_mask_logit`), so an untrained denoiser passes audio through.
Also here: the batched, length-masked SI-SNR, SNR, multi-resolution STFT and hybrid
(compressed spectra + SI-SNR) losses of the joint objective.
"""
from __future__ import annotations

from typing import Sequence, Tuple

import tensorflow as tf
import tf_keras as keras

from components.config import DenoiserConfig
from components.models.dtln import DTLN

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
        if cfg.mask == "complex":  # real and imaginary parts; the real ones start at init_mask_logit
            bias = keras.initializers.Constant([cfg.init_mask_logit] * bins + [0.0] * bins)
            # (zero kernel: a random one would turn the phases of an untrained model's output)
            self.to_mask = keras.layers.Dense(2 * bins, dtype="float32", name="mask", bias_initializer=bias,
                                              kernel_initializer="zeros")
        else:
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

    def mask(self, spectrum: tf.Tensor, training: bool = False) -> Tuple[tf.Tensor, tf.Tensor]:
        """The estimated mask's (real, imaginary) parts, float32 [B, frames, bins] each: a
        magnitude mask in [0, 1] has no imaginary part; a complex one has |mask| < 1."""
        log_power = tf.math.log(tf.square(tf.abs(spectrum)) + 1e-6)
        x = self.norm(tf.cast(log_power, self.compute_dtype), training=training)
        x = tf.cast(self.to_mask(self.rnn(self.conv(x), training=training)), tf.float32)
        if self.cfg.mask == "magnitude":
            return x, tf.zeros_like(x)
        real, imag = tf.split(x, 2, axis=-1)
        norm = tf.sqrt(tf.square(real) + tf.square(imag) + 1e-8)
        gain = tf.tanh(norm) / norm  # the direction of (real, imag), tanh(|.|) long
        return real * gain, imag * gain

    def call(self, waveform: tf.Tensor, training: bool = False) -> tf.Tensor:
        spectrum = self.spectrum(waveform)
        mask_real, mask_imag = self.mask(spectrum, training=training)
        # The complex product in real arithmetic: no complex cast in the gradient.
        real, imag = tf.math.real(spectrum), tf.math.imag(spectrum)
        masked = tf.complex(real * mask_real - imag * mask_imag, real * mask_imag + imag * mask_real)
        return self.waveform(masked, tf.shape(waveform)[1])


def build_denoiser(cfg: DenoiserConfig) -> keras.Model:
    """The denoiser `cfg.design` names: this module's conv + BiGRU mask, or DTLN (components/models/dtln.py)."""
    return DTLN(cfg) if cfg.design == "dtln" else Denoiser(cfg)


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


def snr(reference: tf.Tensor, estimate: tf.Tensor, valid: tf.Tensor) -> tf.Tensor:
    """Per-example SNR in dB over the valid samples, not scale-invariant (DTLN's training measure,
    Westhausen & Meyer 2020): [B, T] x [B, T] x [B, T] 0/1 -> [B]."""
    valid = tf.cast(valid, tf.float32)
    reference = tf.cast(reference, tf.float32) * valid
    noise = tf.cast(estimate, tf.float32) * valid - reference
    ratio = (tf.reduce_sum(reference * reference, -1) + _EPS) / (tf.reduce_sum(noise * noise, -1) + _EPS)
    return 10.0 * tf.math.log(ratio) / tf.math.log(10.0)


def _valid_frames(valid: tf.Tensor, fft_length: int, frame_step: int) -> tf.Tensor:
    """[B, T] 0/1 float -> [B, F] 0/1: the STFT frames (pad_end) that hold a valid sample."""
    return tf.reduce_max(tf.signal.frame(valid, fft_length, frame_step, pad_end=True), -1)


def compressed_spectral_loss(reference: tf.Tensor, estimate: tf.Tensor, valid: tf.Tensor, fft_length: int = 512,
                             frame_step: int = 256, compress: float = 0.3, ri_weight: float = 30.0,
                             magnitude_weight: float = 70.0) -> tf.Tensor:
    """The spectral part of `hybrid_loss`: [B, T] x [B, T] x [B, T] 0/1 -> [B], ri_weight x the mean squared
    error of the power-law compressed (|X|^compress, phase kept) real and imaginary parts + magnitude_weight x
    that of the compressed magnitudes, over the frames holding valid samples."""
    valid = tf.cast(valid, tf.float32)
    reference, estimate = tf.cast(reference, tf.float32) * valid, tf.cast(estimate, tf.float32) * valid
    parts = []
    for x in (reference, estimate):
        spectrum = tf.signal.stft(x, fft_length, frame_step, fft_length, pad_end=True)
        real, imag = tf.math.real(spectrum), tf.math.imag(spectrum)
        # (sqrt with a floor, not tf.abs: a finite gradient at a zero bin, as the reference's clamp)
        magnitude = tf.sqrt(tf.square(real) + tf.square(imag) + 1e-12)
        shrink = tf.pow(magnitude, compress - 1.0)
        parts.append((real * shrink, imag * shrink, magnitude * shrink))
    (ref_real, ref_imag, ref_mag), (est_real, est_imag, est_mag) = parts
    frames = _valid_frames(valid, fft_length, frame_step)[..., tf.newaxis]  # [B, F, 1]
    count = tf.reduce_sum(frames, [1, 2]) * (fft_length // 2 + 1) + 1e-7

    def mean_square(a, b):
        return tf.reduce_sum(tf.square(a - b) * frames, [1, 2]) / count

    return ri_weight * (mean_square(ref_real, est_real) + mean_square(ref_imag, est_imag)) + (
        magnitude_weight * mean_square(ref_mag, est_mag))


def hybrid_loss(reference: tf.Tensor, estimate: tf.Tensor, valid: tf.Tensor) -> tf.Tensor:
    """Per-example hybrid loss of GTCRN (Rong et al., ICASSP 2024; its training code's `HybridLoss`,
    github.com/Xiaobin-Rong/SEtrain) over the valid samples: [B, T] x [B, T] x [B, T] 0/1 -> [B]:
    `compressed_spectral_loss` minus SI-SNR in bels (dB / 10). Compressed spectral losses are what Braun &
    Tashev (2021, "A consolidated view of loss functions for supervised deep learning-based speech
    enhancement") found PESQ and STOI reward; the SI-SNR term keeps the waveform. Written here: the
    maintained implementations are PyTorch's."""
    return compressed_spectral_loss(reference, estimate, valid) - si_snr(reference, estimate, valid) / 10.0


# (fft_length, frame_step) pairs, Parallel WaveGAN's (Yamamoto et al. 2020) at 16 kHz; window = fft_length.
STFT_RESOLUTIONS = ((512, 128), (1024, 256), (256, 64))


def multi_resolution_stft_loss(reference: tf.Tensor, estimate: tf.Tensor, valid: tf.Tensor,
                               resolutions: Sequence[Tuple[int, int]] = STFT_RESOLUTIONS) -> tf.Tensor:
    """Per-example multi-resolution STFT loss over the valid samples: [B, T] x [B, T] x [B, T]
    0/1 -> [B], the mean over `resolutions` of spectral convergence (||C| - |E||_F / ||C||_F)
    plus the mean absolute log-magnitude difference over the frames holding valid samples.
    Written here: the maintained implementations (auraloss) are PyTorch's."""
    valid = tf.cast(valid, tf.float32)
    reference, estimate = tf.cast(reference, tf.float32) * valid, tf.cast(estimate, tf.float32) * valid
    losses = []
    for fft_length, frame_step in resolutions:
        # (floored at 1e-3, some 80 dB under a unit-RMS signal's speech bins: silence in the
        # reference does not make the log term, and its gradient, explode)
        ref, est = (tf.maximum(tf.abs(tf.signal.stft(x, fft_length, frame_step, fft_length, pad_end=True)), 1e-3)
                    for x in (reference, estimate))
        convergence = tf.sqrt(tf.reduce_sum(tf.square(ref - est), [1, 2]) + 1e-12) / tf.sqrt(
            tf.reduce_sum(tf.square(ref), [1, 2]))  # (+1e-12: a finite gradient where they agree)
        frames = _valid_frames(valid, fft_length, frame_step)  # [B, F]
        log_distance = tf.reduce_sum(tf.abs(tf.math.log(ref) - tf.math.log(est)) * frames[..., tf.newaxis],
                                     [1, 2]) / (tf.reduce_sum(frames, -1) * (fft_length // 2 + 1) + 1e-7)
        losses.append(convergence + log_distance)
    return tf.add_n(losses) / len(losses)
