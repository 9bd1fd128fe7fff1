"""Audio statistics of one example's window, written by the WAV ExampleGen as features.

Measured on the samples as the file holds them (its own rate and channels, before
the mono 16 kHz conversion, which would smooth clipped peaks and average away a
channel's DC): StatisticsGen summarizes them, the schema bounds them (bounds from
`validation.*` settings, `components/validation/schema.py`) and ExampleValidator flags windows
outside those bounds before Transform runs.
"""
from __future__ import annotations

from typing import Dict

import numpy as np

from components import features

FULL_SCALE = 32767 / 32768  # the largest PCM16 magnitude; at or above it a sample is clipped
SILENCE_DBFS = -60.0  # a 10-ms frame quieter than this counts as silence
_FLOOR_DBFS = -120.0  # the level reported for digital silence (log of zero)
_FRAME_S = 0.01


def dbfs(power: np.ndarray) -> np.ndarray:
    """10 log10 of mean-square power relative to full scale, floored at -120 dBFS."""
    return np.maximum(10 * np.log10(np.maximum(power, 1e-30)), _FLOOR_DBFS)


def measure(samples: np.ndarray, rate: int, channels: int) -> Dict[str, float]:
    """Statistics of float samples in [-1, 1], shape [frames, channels] or [frames]."""
    samples = np.asarray(samples, np.float64)
    if samples.ndim == 1:
        samples = samples[:, None]
    if samples.size == 0:  # a window between two samples of a very low-rate file: nothing in it
        return {features.CLIPPING_RATIO: 0.0, features.RMS_DBFS: _FLOOR_DBFS, features.DC_OFFSET: 0.0,
                features.SILENCE_FRACTION: 1.0, features.SOURCE_SAMPLE_RATE: int(rate),
                features.SOURCE_CHANNELS: int(channels)}
    frame = max(int(rate * _FRAME_S), 1)
    whole = samples.shape[0] // frame * frame
    if whole:
        frame_power = np.mean(samples[:whole].reshape(-1, frame, samples.shape[1]) ** 2, axis=(1, 2))
        silence = float(np.mean(dbfs(frame_power) < SILENCE_DBFS))
    else:  # a window shorter than one frame
        silence = float(dbfs(np.mean(samples ** 2)) < SILENCE_DBFS)
    return {
        features.CLIPPING_RATIO: float(np.mean(np.abs(samples) >= FULL_SCALE)),
        features.RMS_DBFS: float(dbfs(np.mean(samples ** 2))),
        features.DC_OFFSET: float(np.mean(samples)),
        features.SILENCE_FRACTION: silence,
        features.SOURCE_SAMPLE_RATE: int(rate),
        features.SOURCE_CHANNELS: int(channels),
    }
