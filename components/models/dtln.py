"""DTLN, the dual-signal transformation LSTM network of Westhausen & Meyer (Interspeech 2020;
github.com/breizhn/DTLN, TensorFlow): a causal denoiser of about a million parameters, chosen because
it is a published, real-time design in this stack's own framework. Two stages, frame by frame:

1. STFT of 32-ms frames every 8 ms (rectangular window) -> log magnitude, instant layer norm ->
   two LSTM layers -> a [0, 1] gain per bin on the magnitude, the noisy phase kept -> inverse FFT:
   enhanced frames.
2. Those frames -> a learned encoding (a 1x1 convolution) -> instant layer norm -> two LSTM layers
   -> a [0, 1] gain on the encoding -> a learned decoding back to frames -> overlap-add.

Every layer looks at the current and past frames only, so the latency is one frame (32 ms), after the first
`dtln_warmup_seconds` of a stream: the states are first warmed on that stretch, time-reversed. Both of the
authors' variants: the normalized input (DTLN_norm: instant layer norm of the log magnitude; `dtln_input:
log_norm`), the project's own from R1 on, since call levels vary; and the magnitude as it is (`magnitude`), the
published 500-h model's, which is level-dependent and so gets its unit-variance input at `dtln_level_dbfs`. Works
on [B, samples] waveforms of any length, like `denoiser.Denoiser`.
"""
from __future__ import annotations

import tensorflow as tf
import tf_keras as keras

from components.config import DenoiserConfig
from components.features import SAMPLE_RATE


def _separation(units: int, size: int, name: str) -> keras.Sequential:
    """Two causal LSTM layers and a sigmoid gain of `size` per frame (DTLN's separation kernel)."""
    return keras.Sequential([keras.layers.LSTM(units, return_sequences=True), keras.layers.Dropout(0.25),
                             keras.layers.LSTM(units, return_sequences=True),
                             keras.layers.Dense(size, activation="sigmoid", dtype="float32")], name=name)


class DTLN(keras.Model):
    def __init__(self, cfg: DenoiserConfig, **kwargs):
        super().__init__(name="denoiser", **kwargs)
        self.cfg = cfg
        bins = cfg.frame_length // 2 + 1
        # DTLN's "instant layer normalization": each frame over its features, a learned gain and bias per feature
        self.norm_1 = (keras.layers.LayerNormalization(axis=-1, epsilon=1e-7, name="norm_1")
                       if cfg.dtln_input == "log_norm" else None)
        self.stage_1 = _separation(cfg.lstm_units, bins, "stage_1")
        self.encoder = keras.layers.Conv1D(cfg.encoder_size, 1, use_bias=False, name="encoder")
        self.norm_2 = keras.layers.LayerNormalization(axis=-1, epsilon=1e-7, name="norm_2")
        self.stage_2 = _separation(cfg.lstm_units, cfg.encoder_size, "stage_2")
        self.decoder = keras.layers.Conv1D(cfg.frame_length, 1, use_bias=False, dtype="float32", name="decoder")

    def call(self, waveform: tf.Tensor, training: bool = False) -> tf.Tensor:
        cfg = self.cfg
        waveform = tf.cast(waveform, tf.float32)
        samples = tf.shape(waveform)[1]
        # The LSTMs start from zero states: warmed on a mirrored lead-in (the input's start, time-reversed, so the
        # joint is continuous: the reflect padding torch.stft's center=True uses at edges), its output cut off.
        lead = tf.maximum(tf.minimum(int(round(cfg.dtln_warmup_seconds * SAMPLE_RATE)), samples - 1), 0)
        waveform = tf.concat([tf.reverse(waveform[:, 1:lead + 1], axis=[1]), waveform], axis=1)
        # The Transform's unit-std audio is brought to the level the weights were trained at, and back after.
        gain = 1.0 if cfg.dtln_level_dbfs is None or self.norm_1 is not None else 10.0 ** (cfg.dtln_level_dbfs / 20.0)
        return self._enhance(waveform * gain, training)[:, lead:] / gain

    def _enhance(self, waveform: tf.Tensor, training: bool) -> tf.Tensor:
        cfg = self.cfg
        samples = tf.shape(waveform)[1]
        # Padded by a frame less one hop at the start (each output sample then lies under full frames)
        # and to whole frames at the end; the output is cut back to the input's samples.
        pad = cfg.frame_length - cfg.frame_step
        x = tf.pad(waveform, [[0, 0], [pad, pad]])
        frames = tf.signal.frame(x, cfg.frame_length, cfg.frame_step, pad_end=True)  # [B, F, frame_length]
        spectrum = tf.signal.rfft(frames)
        magnitude = tf.abs(spectrum)
        features_1 = (self.norm_1(tf.cast(tf.math.log(magnitude + 1e-7), self.compute_dtype)) if self.norm_1 is not None
                      else tf.cast(magnitude, self.compute_dtype))
        gain_1 = tf.cast(self.stage_1(features_1, training=training), tf.float32)
        phase = spectrum / tf.cast(tf.maximum(magnitude, 1e-12), tf.complex64)
        frames_1 = tf.signal.irfft(tf.cast(magnitude * gain_1, tf.complex64) * phase)
        encoded = self.encoder(tf.cast(frames_1, self.compute_dtype))
        gain_2 = tf.cast(self.stage_2(self.norm_2(encoded), training=training), self.compute_dtype)
        decoded = tf.cast(self.decoder(encoded * gain_2), tf.float32)
        audio = tf.signal.overlap_and_add(decoded, cfg.frame_step)
        return audio[:, pad:pad + samples]
