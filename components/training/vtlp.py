"""Vocal tract length perturbation (VTLP, Jaitly & Hinton 2013) of log-mel features.

A speaker with a shorter or longer vocal tract has the same formants at frequencies
scaled by a factor alpha. VTLP draws alpha per training example and warps the spectrum's
frequency axis piecewise linearly: f -> alpha * f up to a boundary, then a straight line
to the Nyquist frequency, so the band stays the band. Here the warp is applied to the
log-mel features by linear interpolation along the mel axis: the output bin centred at f'
reads the input at the frequency the warp sends to f'. Formants move, pitch and tempo do
not (speed perturbation moves all three together).

Applied by the model when training (components/models/model.py), to the log-mel it reads: the
Transform's, or the one it computes from the denoiser's output. Written here: audiomentations
and nlpaug warp waveforms or numpy spectrograms outside the graph; this is batched TF inside
the training step.
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from components import features
from components.config import FeatureConfig, VtlpConfig


def _hz_to_mel(hz):
    return 1127.0 * np.log1p(np.asarray(hz, np.float64) / 700.0)  # the HTK mel scale tf.signal uses


def _mel_to_hz(mel):
    return 700.0 * np.expm1(np.asarray(mel, np.float64) / 1127.0)


def bin_centres_hz(cfg: FeatureConfig) -> np.ndarray:
    """[bins] the centre frequency of each mel bin of tf.signal.linear_to_mel_weight_matrix."""
    edges = np.linspace(_hz_to_mel(cfg.lower_hz), _hz_to_mel(cfg.upper_hz), cfg.num_mel_bins + 2)
    return _mel_to_hz(edges[1:-1])


def source_hz(target_hz: tf.Tensor, alpha: tf.Tensor, boundary_hz: float) -> tf.Tensor:
    """The inverse of the VTLP warp: for output frequencies [B, K] and factors [B, 1], the
    input frequency each reads. The forward warp is f' = alpha f below
    f0 = boundary_hz min(alpha, 1) / alpha, and the line through (f0, alpha f0) and
    (Nyquist, Nyquist) above it."""
    nyquist = features.SAMPLE_RATE / 2
    knee = boundary_hz * tf.minimum(alpha, 1.0)  # alpha * f0: the knee on the output axis
    below = target_hz / alpha
    above = nyquist - (nyquist - target_hz) * (nyquist - knee / alpha) / (nyquist - knee)
    return tf.where(target_hz <= knee, below, above)


def warp(log_mel: tf.Tensor, alpha: tf.Tensor, cfg: FeatureConfig, boundary_hz: float) -> tf.Tensor:
    """[B, frames, bins] log-mel, [B] factors -> the log-mel of the warped spectrum, each
    example by its own factor (1 leaves it as it is)."""
    centres = bin_centres_hz(cfg)
    first_mel = float(_hz_to_mel(centres[0]))
    step = float(_hz_to_mel(centres[1]) - first_mel) if cfg.num_mel_bins > 1 else 1.0  # even in mel
    alpha = tf.cast(alpha, tf.float32)[:, tf.newaxis]
    src = source_hz(tf.constant(centres, tf.float32)[tf.newaxis, :], alpha, boundary_hz)  # [B, bins]
    position = (1127.0 * tf.math.log1p(src / 700.0) - first_mel) / step  # on the mel-bin axis
    position = tf.clip_by_value(position, 0.0, float(cfg.num_mel_bins - 1))
    low = tf.cast(tf.floor(position), tf.int32)
    high = tf.minimum(low + 1, cfg.num_mel_bins - 1)
    frac = (position - tf.cast(low, tf.float32))[:, tf.newaxis, :]
    at_low = tf.gather(log_mel, low, axis=2, batch_dims=1)
    at_high = tf.gather(log_mel, high, axis=2, batch_dims=1)
    return at_low + frac * (at_high - at_low)


def draw_factors(seeds: tf.Tensor | None, batch: tf.Tensor, cfg: VtlpConfig) -> tf.Tensor:
    """[B] factors: uniform in cfg.factor_range with probability cfg.probability, else 1;
    from per-example stateless seeds [B, 2] (the same seed, the same factor), or fresh draws."""
    if seeds is None:
        u = tf.random.uniform([batch, 2])
    else:
        u = tf.map_fn(lambda s: tf.random.stateless_uniform([2], s), seeds,
                      fn_output_signature=tf.TensorSpec([2], tf.float32))
    lo, hi = cfg.factor_range
    return tf.where(u[:, 0] < cfg.probability, lo + (hi - lo) * u[:, 1], 1.0)


def augment(log_mel: tf.Tensor, cfg: VtlpConfig, feature_cfg: FeatureConfig,
            seeds: tf.Tensor | None = None) -> tf.Tensor:
    """VTLP of a training batch [B, frames, bins] (`trainer.vtlp`); unchanged when it is off."""
    if cfg.probability <= 0:
        return log_mel
    factors = draw_factors(seeds, tf.shape(log_mel)[0], cfg)
    return warp(log_mel, factors, feature_cfg, cfg.boundary_hz)
