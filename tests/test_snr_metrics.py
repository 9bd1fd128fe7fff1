"""SNR and SI-SNR against hand-computed cases and fast_bss_eval (an independent implementation)."""
import fast_bss_eval.numpy
import numpy as np
import pytest

from components.audio.snr import improvement_db, si_snr_db, snr_db


def test_hand_computed_snr():
    reference = np.array([1.0, -1.0, 1.0, -1.0])
    assert snr_db(reference, reference + 0.1 * reference) == pytest.approx(20.0)  # error power 1 % of signal
    assert snr_db(reference, np.zeros(4)) == pytest.approx(0.0)


def test_si_snr_ignores_gain_but_snr_does_not():
    rng = np.random.default_rng(0)
    reference = rng.standard_normal(16000)
    estimate = reference + 0.1 * rng.standard_normal(16000)
    assert si_snr_db(reference, 3.0 * estimate) == pytest.approx(si_snr_db(reference, estimate))
    assert snr_db(reference, 3.0 * estimate) < snr_db(reference, estimate)


def test_si_snr_matches_fast_bss_eval_si_sdr():
    rng = np.random.default_rng(1)
    for noise_level in (0.01, 0.3, 1.0, 3.0):
        reference = rng.standard_normal(8000)
        reference -= reference.mean()
        estimate = 0.7 * reference + noise_level * rng.standard_normal(8000)
        estimate -= estimate.mean()
        theirs = float(fast_bss_eval.numpy.si_sdr(reference[None], estimate[None], zero_mean=True)[0])
        assert si_snr_db(reference, estimate) == pytest.approx(theirs, abs=1e-3)


def test_undefined_cases_are_none_never_nan_or_inf():
    silent = np.zeros(100)
    signal = np.ones(100) + np.arange(100) / 100
    assert snr_db(silent, signal) is None and si_snr_db(silent, signal) is None
    assert snr_db(signal, signal) is None and si_snr_db(signal, signal) is None  # zero error
    assert snr_db(signal, np.full(100, np.nan)) is None
    assert snr_db(signal, np.ones(50)) is None  # length mismatch
    assert improvement_db(snr_db, silent, signal, signal) is None


def test_improvement_is_enhanced_minus_noisy():
    rng = np.random.default_rng(2)
    clean = rng.standard_normal(4000)
    noise = rng.standard_normal(4000)
    noisy, enhanced = clean + noise, clean + 0.1 * noise
    assert improvement_db(snr_db, clean, noisy, enhanced) == pytest.approx(20.0, abs=1e-9)
