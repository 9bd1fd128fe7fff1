"""Fresh background noise under the training examples that have none (`trainer.background`).

The keyword recipe (Speech Commands' training script, Warden 2018, and the models trained with it:
BC-ResNet, MatchboxNet) mixes background noise into most training examples afresh every epoch, so the
classifier meets each word in ever new noise instead of the few fixed noisy copies an ExampleGen wrote.
Here: each clean recording of a training batch (one without a reference) is, with `probability`,
mixed with a stretch of a noise recording from `noise_base` (held in memory, `context.noise_bank`) at an
SNR drawn from `snr_db_range`, over its whole valid span (a word moved behind silence by
`augment.placement_probability` gets noise before it too); the recording becomes its reference, so a
trained denoiser learns from the new pair as well. Draws are stateless, from each example's (seed,
epoch, index): a resumed run draws what the uninterrupted one drew.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np
import tensorflow as tf

from components.config import BackgroundConfig
from components.training import context


def make_mixer(cfg: BackgroundConfig, bank: Tuple[np.ndarray, np.ndarray, np.ndarray]):
    """`bank` from `context.noise_bank` -> mix(seeds [B, 2], waveform [B, N], valid samples [B], speech power
    [B] over the speech's own samples, has_clean [B] bool) -> (waveform with the drawn noises, mixed [B] bool)."""
    bank = tuple(tf.constant(a) for a in bank)

    def mix(seeds, waveform, num_samples, speech_power, has_clean):
        seeds = tf.map_fn(lambda s: tf.cast(tf.random.experimental.stateless_fold_in(s, 5), tf.int64), seeds,
                          fn_output_signature=tf.TensorSpec([2], tf.int64))  # apart from the other draws
        u = tf.map_fn(lambda s: tf.random.stateless_uniform([4], s), seeds,
                      fn_output_signature=tf.TensorSpec([4], tf.float32))  # mixed?, recording, offset, SNR
        n = tf.shape(waveform, out_type=tf.int64)[1]
        valid = tf.sequence_mask(num_samples, n, dtype=waveform.dtype)
        noise = context.at_snr(speech_power[:, tf.newaxis], context.stretches(bank, u[:, 1], u[:, 2], n), u[:, 3],
                               cfg.snr_db_range, valid) * valid
        mixed = (u[:, 0] < cfg.probability) & tf.logical_not(has_clean) & (speech_power > 0)
        return tf.where(mixed[:, tf.newaxis], waveform + noise, waveform), mixed

    return mix
