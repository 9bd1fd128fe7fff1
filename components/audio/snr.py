"""SNR and SI-SNR (scale-invariant SNR, Le Roux et al. 2019) of an estimate against a
clean reference, in dB, and their improvement over the unprocessed input.

Undefined cases never become NaN or infinity: a silent reference, a signal that
is not finite, or a perfect estimate (zero error) returns None, and callers
count them as excluded. Written by hand because the metric must run the same
inside TFMA and the benchmarks; tests check it against fast_bss_eval.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

_SILENT = 1e-10  # mean-square power below this counts as silence


def _valid(reference: np.ndarray, estimate: np.ndarray) -> bool:
    return (reference.shape == estimate.shape and reference.size > 0
            and np.all(np.isfinite(reference)) and np.all(np.isfinite(estimate))
            and np.mean(reference ** 2) > _SILENT)


def snr_db(reference: np.ndarray, estimate: np.ndarray) -> Optional[float]:
    """10 log10(|s|^2 / |s - s_hat|^2); None where undefined."""
    reference, estimate = np.asarray(reference, np.float64), np.asarray(estimate, np.float64)
    if not _valid(reference, estimate):
        return None
    error = np.sum((reference - estimate) ** 2)
    if error <= 0.0:
        return None
    return float(10 * np.log10(np.sum(reference ** 2) / error))


def si_snr_db(reference: np.ndarray, estimate: np.ndarray) -> Optional[float]:
    """SI-SNR: SNR of the estimate's projection on the (zero-mean) reference; None where undefined."""
    reference, estimate = np.asarray(reference, np.float64), np.asarray(estimate, np.float64)
    if not _valid(reference, estimate):
        return None
    reference = reference - reference.mean()
    estimate = estimate - estimate.mean()
    if np.mean(reference ** 2) <= _SILENT:
        return None
    target = np.dot(estimate, reference) / np.dot(reference, reference) * reference
    noise = estimate - target
    if np.sum(noise ** 2) <= 0.0 or np.sum(target ** 2) <= 0.0:
        return None
    return float(10 * np.log10(np.sum(target ** 2) / np.sum(noise ** 2)))


def improvement_db(metric, clean: np.ndarray, noisy: np.ndarray, enhanced: np.ndarray) -> Optional[float]:
    """metric(clean, enhanced) - metric(clean, noisy); None when either is undefined."""
    after, before = metric(clean, enhanced), metric(clean, noisy)
    return None if after is None or before is None else after - before
