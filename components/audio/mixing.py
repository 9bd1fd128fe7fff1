"""Mixing clean speech with noise at a chosen SNR, used by the ExampleGen's
`noise_base` augmentation and by the demo data generator.

Deterministic: the random generator is seeded from the configured seed and the
source file's path, so reruns produce the same examples.
"""
from __future__ import annotations

import hashlib
from typing import Tuple

import numpy as np

_PEAK = 0.99
_TRIES = 20


def rng_for(seed: int, source: str) -> np.random.Generator:
    """A generator that depends only on (seed, source), not on processing order."""
    digest = hashlib.sha256(f"{seed}:{source}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def mix_at_snr(clean: np.ndarray, noise: np.ndarray, snr_db: float,
               rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
    """(noisy, clean) where noisy = clean + a random segment of `noise` scaled so that
    10 log10(|clean|^2 / |noise part|^2) = snr_db. Noise shorter than the clip is
    looped. If the mixture would clip, both are scaled down by the same gain, so the
    SNR and the pairing hold; the returned clean is the reference to store."""
    if np.mean(clean ** 2) <= 0 or np.mean(noise ** 2) <= 0:
        raise ValueError("cannot mix at an SNR with a silent signal or silent noise")
    if len(noise) <= len(clean):
        noise = np.tile(noise, len(clean) // len(noise) + 2)
    for _ in range(_TRIES):  # a digitally silent stretch of the noise cannot be scaled to an SNR
        start = int(rng.integers(0, len(noise) - len(clean)))
        segment = noise[start:start + len(clean)]
        if np.mean(segment ** 2) > 0:
            break
    else:
        raise ValueError(f"{_TRIES} random segments of the noise recording were digitally silent")
    gain = np.sqrt(np.mean(clean ** 2) / (np.mean(segment ** 2) * 10 ** (snr_db / 10)))
    noisy = clean + gain * segment
    peak = float(np.abs(noisy).max())
    scale = _PEAK / peak if peak > _PEAK else 1.0
    if scale == 1.0:
        return noisy, clean
    return (noisy * scale).astype(np.float32), (clean * scale).astype(np.float32)


def attenuation_limited(enhanced, noisy, limit_db: float):
    """`enhanced` with `noisy` mixed back at -limit_db dB, so at most limit_db dB of attenuation:
    DeepFilterNet's attenuation limit (Schroeter et al. 2022; `enhance.py --atten-lim`). Linear in the
    waveform: numpy arrays or TensorFlow tensors alike (trainer.denoiser.attenuation_limit_db)."""
    share = 10.0 ** (-limit_db / 20.0)
    return (1.0 - share) * enhanced + share * noisy
