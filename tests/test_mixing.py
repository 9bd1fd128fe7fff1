"""Mixing at an SNR: exact on the stored pair, and never NaN when the noise has silence."""
import numpy as np
import pytest

from components.audio import mixing


def test_mix_hits_the_snr_and_skips_silent_stretches_of_the_noise():
    rng = np.random.default_rng(0)
    clean = 0.1 * np.sin(np.arange(8000) / 5.0)
    noise = np.concatenate([np.zeros(40000), rng.standard_normal(40000)])  # half digital silence
    for seed in range(20):  # many draws land in the silent half first
        noisy, reference = mixing.mix_at_snr(clean, noise, 5.0, np.random.default_rng(seed))
        assert np.all(np.isfinite(noisy))
        snr = 10 * np.log10(np.sum(reference ** 2) / np.sum((noisy - reference) ** 2))
        assert snr == pytest.approx(5.0, abs=1e-6)


def test_noise_that_is_silent_wherever_drawn_is_a_clear_error():
    noise = np.concatenate([np.zeros(100000), [1.0]])
    with pytest.raises(ValueError, match="random segments of the noise recording were digitally silent"):
        mixing.mix_at_snr(np.ones(8000), noise, 5.0, np.random.default_rng(0))
