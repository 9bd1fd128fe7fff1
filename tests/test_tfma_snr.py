"""The Evaluator's SNR metrics (TFMA combiners) on hand-built extracts: values
against fast_bss_eval and hand-computed SNRs, undefined and reference-less
examples left out and counted, never NaN."""
import fast_bss_eval.numpy
import numpy as np
import pytest
from tensorflow_model_analysis.metrics import metric_types

from components import features
from components.evaluation import tfma_snr


def _extract(noisy, clean, enhanced, has_clean=1, num_samples=None):
    n = len(noisy) if num_samples is None else num_samples
    return metric_types.StandardMetricInputs({
        "transformed_features": {features.WAVEFORM: np.asarray(noisy, np.float32),
                                 features.CLEAN_WAVEFORM: np.asarray(clean, np.float32),
                                 features.HAS_CLEAN: np.array([has_clean]),
                                 features.NUM_SAMPLES: np.array([n])},
        "predictions": {features.OUT_PROBABILITIES: np.array([0.5, 0.5]),
                        features.OUT_ENHANCED: np.asarray(enhanced, np.float32)}})


def _evaluate(extracts):
    (computation,) = tfma_snr.SiSnrImprovement().computations(model_names=[""])
    combiner = computation.combiner
    accumulators = []
    for part in (extracts[::2], extracts[1::2]):  # two workers, then merged
        acc = combiner.create_accumulator()
        for extract in part:
            acc = combiner.add_input(acc, extract)
        accumulators.append(acc)
    return {key.name: value for key, value in
            combiner.extract_output(combiner.merge_accumulators(accumulators)).items()}


def test_both_metric_classes_share_one_computation():
    (a,) = tfma_snr.SiSnrImprovement().computations(model_names=["candidate"])
    (b,) = tfma_snr.SnrImprovement().computations(model_names=["candidate"])
    assert a == b  # TFMA de-duplicates equal computations: one pass computes both
    assert {k.name for k in a.keys} >= {tfma_snr.SNR_IMPROVEMENT, tfma_snr.SI_SNR_IMPROVEMENT}


def test_values_match_fast_bss_eval_and_hand_computed_snr():
    rng = np.random.default_rng(0)
    clean = rng.standard_normal((3, 4000))
    clean -= clean.mean(axis=1, keepdims=True)
    noise = rng.standard_normal((3, 4000))
    noisy = clean + noise  # 0 dB SNR
    enhanced = clean + 0.1 * noise  # the error power drops 100x: SNR +20 dB exactly
    result = _evaluate([_extract(noisy[i], clean[i], enhanced[i]) for i in range(3)])
    assert result[tfma_snr.SNR_IMPROVEMENT] == pytest.approx(20.0, abs=1e-4)
    def si_sdr(est):
        return fast_bss_eval.numpy.si_sdr(clean, est - est.mean(axis=1, keepdims=True), zero_mean=True)
    expected = float(np.mean(si_sdr(enhanced) - si_sdr(noisy)))
    assert result[tfma_snr.SI_SNR_IMPROVEMENT] == pytest.approx(expected, abs=1e-2)
    assert result[tfma_snr.SCORED] == 3 and result[tfma_snr.UNDEFINED] == 0


def test_padding_beyond_num_samples_is_ignored():
    rng = np.random.default_rng(1)
    clean, noise = rng.standard_normal(1000), rng.standard_normal(1000)
    padded = lambda a: np.concatenate([a, 50 * np.ones(500)])  # noqa: E731
    short = _evaluate([_extract(padded(clean + noise), padded(clean), padded(clean + 0.5 * noise), num_samples=1000)])
    assert short[tfma_snr.SNR_IMPROVEMENT] == pytest.approx(20 * np.log10(2), abs=1e-4)  # error halved: 6.02 dB


def test_silent_references_and_examples_without_one_are_excluded_and_counted():
    rng = np.random.default_rng(2)
    clean, noise = rng.standard_normal(800), rng.standard_normal(800)
    extracts = [
        _extract(clean + noise, clean, clean + 0.5 * noise),  # scored
        _extract(noise, np.zeros(800), 0.5 * noise),  # silent reference: undefined
        _extract(clean + noise, clean, clean),  # perfect estimate: undefined, not +inf
        _extract(clean, np.zeros(800), clean, has_clean=0),  # no reference
    ]
    result = _evaluate(extracts)
    assert result[tfma_snr.SCORED] == 1
    assert result[tfma_snr.UNDEFINED] == 2
    assert result[tfma_snr.NO_REFERENCE] == 1
    assert result[tfma_snr.SNR_IMPROVEMENT] == pytest.approx(20 * np.log10(2), abs=1e-4)
    assert all(np.isfinite(v) for v in result.values())


def test_a_slice_with_nothing_scored_has_no_improvement_value_rather_than_nan():
    result = _evaluate([_extract(np.ones(100), np.zeros(100), np.ones(100), has_clean=0)] * 2)
    assert tfma_snr.SI_SNR_IMPROVEMENT not in result and tfma_snr.SNR_IMPROVEMENT not in result
    assert result[tfma_snr.NO_REFERENCE] == 2


def test_candidate_and_baseline_are_scored_apart_and_a_classifier_only_baseline_scores_zero():
    """As the Evaluator runs it: extracts keyed by model name, one computation per model."""
    rng = np.random.default_rng(3)
    clean, noise = rng.standard_normal(800), rng.standard_normal(800)
    noisy = clean + noise
    extract = metric_types.StandardMetricInputs({
        "transformed_features": {name: {features.WAVEFORM: noisy, features.CLEAN_WAVEFORM: clean,
                                        features.HAS_CLEAN: np.array([1]), features.NUM_SAMPLES: np.array([800])}
                                 for name in ("candidate", "baseline")},
        "predictions": {"candidate": {features.OUT_PROBABILITIES: np.array([1.0]),
                                      features.OUT_ENHANCED: clean + 0.5 * noise},
                        "baseline": {features.OUT_PROBABILITIES: np.array([1.0])}}})  # no denoiser
    computations = tfma_snr.SiSnrImprovement().computations(model_names=["candidate", "baseline"])
    results = {}
    for computation in computations:
        combiner = computation.combiner
        acc = combiner.add_input(combiner.create_accumulator(), extract)
        results.update({(k.model_name, k.name): v for k, v in combiner.extract_output(acc).items()})
    assert results[("candidate", tfma_snr.SNR_IMPROVEMENT)] == pytest.approx(20 * np.log10(2), abs=1e-4)
    assert results[("baseline", tfma_snr.SNR_IMPROVEMENT)] == 0.0
    assert results[("baseline", tfma_snr.SI_SNR_IMPROVEMENT)] == 0.0
