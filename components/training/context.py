"""Multi-second training sequences for the denoiser (`trainer.context`).

The classifier's training windows are 1-s keywords, but the denoiser serves whole calls,
minutes long, in a noise that holds for seconds: trained on 1-s windows alone its recurrent
state never runs longer than the window. Here each training batch also yields sequences of
`clips` seconds: the batch's clean references, `clips` consecutive rows at a time, joined in
time (a clip's padding is a pause between words) and mixed with ONE stretch of one noise
recording from `noise_base` at an SNR drawn from `snr_db_range`, then through the training
stream's speed, rooms and calls (`trainer.augment`, components/training/augment.py) as one recording.
The model's denoiser runs on them as well, and its -SI-SNR on them joins the loss
(components/training/loop.py); the classifier never sees them.

The sequences travel as [B, samples] rows (CONTEXT_NOISY / CONTEXT_CLEAN), `clips` rows to a
sequence, so a replica's or a micro-batch's share of a batch holds whole sequences (the batch
size is a multiple of `clips`). Draws are stateless, from each sequence's first example's
(seed, epoch, index): a resumed run draws what the uninterrupted one drew.

Two more draws make the mixtures less alike (dynamic mixing as in Wisdom et al. 2020's and the DNS
challenge's recipes): `second_noise_probability`, a second stretch of another recording at its own SNR
over the first (a machine and a crowd at once); `speech_level_db`, each clip's speech at its own level,
up to that many dB up or down, inside a sequence whose noise holds (the talker nearer, then farther).

The noise recordings are read once when the Trainer starts and held in memory as float32,
looped to the sequence length where shorter; `max_noise_mb` bounds them.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from components import features
from components.config import TrainerConfig
from components.ingest.noise_mix import load_noise
from components.training import augment as augment_lib


def noise_bank(noise_base: str, samples: int, max_mb: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(every recording under `noise_base`, joined: float32 [total], the start of each [R],
    the length of each [R]); a recording shorter than `samples` is looped to `samples`."""
    noise = load_noise(noise_base)
    recordings = [r for kind in sorted(noise) for r in noise[kind]]
    looped = [np.tile(r, -(-samples // len(r)))[:max(samples, len(r))] for r in recordings]
    lengths = np.array([len(r) for r in looped], np.int64)
    size_mb = lengths.sum() * 4 / 2 ** 20
    if size_mb > max_mb:
        raise ValueError(f"trainer.context.noise_base={noise_base}: {size_mb:.0f} MB of noise as float32, over "
                         f"trainer.context.max_noise_mb={max_mb}; use fewer or shorter recordings, or raise it")
    logging.info("Denoiser context noise: %d recordings of %d kinds from %s (%.1f min, %.0f MB)", len(looped),
                 len(noise), noise_base, lengths.sum() / features.SAMPLE_RATE / 60, size_mb)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return np.concatenate(looped).astype(np.float32), starts, lengths


def stretches(bank: Tuple[tf.Tensor, tf.Tensor, tf.Tensor], u_recording: tf.Tensor, u_offset: tf.Tensor,
              length: tf.Tensor) -> tf.Tensor:
    """[G, length] noise from `noise_bank`'s (as tensors): for each row a stretch of the recording and at the
    offset its uniform draws [G] pick."""
    flat, starts, lengths = bank
    count = tf.shape(starts, out_type=tf.int64)[0]
    which = tf.minimum(tf.cast(u_recording * tf.cast(count, tf.float32), tf.int64), count - 1)
    room = tf.gather(lengths, which) - length + 1  # the offsets a full stretch fits at
    offset = tf.gather(starts, which) + tf.minimum(tf.cast(u_offset * tf.cast(room, tf.float32), tf.int64),
                                                   room - 1)
    return tf.gather(flat, offset[:, tf.newaxis] + tf.range(length)[tf.newaxis, :])


def at_snr(speech_power: tf.Tensor, noise: tf.Tensor, u_snr: tf.Tensor, snr_db_range,
           valid: tf.Tensor | None = None) -> tf.Tensor:
    """[G, T] noise scaled to an SNR drawn uniformly from `snr_db_range` by `u_snr` [G] against
    `speech_power` [G, 1], the noise's power taken over the `valid` [G, T] 0/1 samples (default: all)."""
    low, high = snr_db_range
    snr_db = low + u_snr[:, tf.newaxis] * (high - low)
    if valid is None:
        noise_power = tf.reduce_mean(tf.square(noise), axis=1, keepdims=True)
    else:
        noise_power = tf.reduce_sum(tf.square(noise) * valid, axis=1, keepdims=True) / tf.maximum(
            tf.reduce_sum(valid, axis=1, keepdims=True), 1.0)
    return noise * tf.sqrt(speech_power / (noise_power * 10.0 ** (snr_db / 10.0) + 1e-12))


def make_sequences(cfg: TrainerConfig, bank: Tuple[np.ndarray, np.ndarray, np.ndarray],
                   rirs: tf.Tensor | None):
    """(per-example seeds [B, 2], featurized batch) -> {CONTEXT_NOISY, CONTEXT_CLEAN}, each
    [B, samples]: rows k*clips .. (k+1)*clips-1 are sequence k, cut into rows. `bank` is
    `noise_bank`'s, `rirs` the training stream's rooms (None: none)."""
    clips = cfg.context.clips
    bank = tuple(tf.constant(a) for a in bank)
    snrs = cfg.context.snr_db_range

    def sequences(seeds: tf.Tensor, batch: dict) -> dict:
        clean_rows = batch[features.CLEAN_WAVEFORM]
        row = tf.shape(clean_rows)[1]
        if cfg.context.speech_level_db > 0:  # each clip's talker nearer or farther (its own draw, fold-in 3)
            u_level = tf.map_fn(
                lambda s: tf.random.stateless_uniform([], tf.random.experimental.stateless_fold_in(s, 3)),
                seeds, fn_output_signature=tf.TensorSpec([], tf.float32))
            level_db = (2.0 * u_level[:, tf.newaxis] - 1.0) * cfg.context.speech_level_db
            clean_rows = clean_rows * 10.0 ** (level_db / 20.0)
        clean = tf.reshape(clean_rows, [-1, clips * row])  # [G, samples]
        length = tf.shape(clean, out_type=tf.int64)[1]
        # Each sequence's own draws, apart from the first clip's other ones (fold-in 2).
        seq_seeds = tf.map_fn(lambda s: tf.cast(tf.random.experimental.stateless_fold_in(s, 2), tf.int64),
                              seeds[::clips], fn_output_signature=tf.TensorSpec([2], tf.int64))
        # recording, offset, SNR; second noise?, its recording, offset, SNR
        u = tf.map_fn(lambda s: tf.random.stateless_uniform([7], s), seq_seeds,
                      fn_output_signature=tf.TensorSpec([7], tf.float32))
        speech_power = tf.reduce_mean(tf.square(clean), axis=1, keepdims=True)
        noise = at_snr(speech_power, stretches(bank, u[:, 0], u[:, 1], length), u[:, 2], snrs)
        if cfg.context.second_noise_probability > 0:
            second = at_snr(speech_power, stretches(bank, u[:, 4], u[:, 5], length), u[:, 6], snrs)
            noise += tf.where(u[:, 3:4] < cfg.context.second_noise_probability, second, tf.zeros_like(second))
        noisy, clean, _ = augment_lib.augment_waveforms(
            clean + noise, clean, tf.fill(tf.shape(clean)[:1], length), seq_seeds, cfg.augment, rirs)
        return {features.CONTEXT_NOISY: tf.reshape(noisy, [-1, row]),
                features.CONTEXT_CLEAN: tf.reshape(clean, [-1, row])}

    return sequences


def join(rows: tf.Tensor, clips: int) -> tf.Tensor:
    """[B, samples] rows -> [B / clips, clips * samples] sequences (the inverse of the cut)."""
    return tf.reshape(rows, [-1, clips * tf.shape(rows)[1]])
