"""The Evaluator's perceptual metrics (PESQ and STOI, TFMA combiners) on hand-built extracts: doing
nothing scores 0, removing the noise scores high, a model without a denoiser scores 0, and a reference of
silence is counted as undefined, not scored."""
import numpy as np
import pytest
from tensorflow_model_analysis.metrics import metric_types

from components import features
from components.evaluation import tfma_quality
from pipeline.datagen import keywords

SR = features.SAMPLE_RATE


def _speech(seed=0):
    """A sentence of espeak-ng's (PESQ scores only what it takes for speech), about 3 s."""
    return keywords.speak("please hold the line while I check your account", "en-us", 150, 40 + seed)


def _extract(noisy, clean, enhanced=None, has_clean=1):
    predictions = {features.OUT_PROBABILITIES: np.array([0.5, 0.5])}
    if enhanced is not None:
        predictions[features.OUT_ENHANCED] = np.asarray(enhanced, np.float32)
    return metric_types.StandardMetricInputs({
        "transformed_features": {features.WAVEFORM: np.asarray(noisy, np.float32),
                                 features.CLEAN_WAVEFORM: np.asarray(clean, np.float32),
                                 features.HAS_CLEAN: np.array([has_clean]),
                                 features.NUM_SAMPLES: np.array([len(noisy)])},
        "predictions": predictions})


def _evaluate(extracts):
    (computation,) = tfma_quality.PesqImprovement().computations(model_names=[""])
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
    (a,) = tfma_quality.PesqImprovement().computations(model_names=["candidate"])
    (b,) = tfma_quality.StoiImprovement().computations(model_names=["candidate"])
    assert a == b
    assert {k.name for k in a.keys} >= {tfma_quality.PESQ_IMPROVEMENT, tfma_quality.STOI_IMPROVEMENT}


def test_nothing_scores_zero_and_removing_the_noise_scores_high():
    clean = _speech()
    noise = 0.05 * np.random.default_rng(0).standard_normal(len(clean)).astype(np.float32)
    nothing = _evaluate([_extract(clean + noise, clean, clean + noise)] * 2)
    assert nothing[tfma_quality.PESQ_IMPROVEMENT] == pytest.approx(0.0, abs=1e-6)
    assert nothing[tfma_quality.STOI_IMPROVEMENT] == pytest.approx(0.0, abs=1e-6)
    cleaned = _evaluate([_extract(clean + noise, clean, clean + 0.05 * noise)] * 2)
    assert cleaned[tfma_quality.PESQ_IMPROVEMENT] > 0.4  # (1.02 -> 1.71 here)
    assert cleaned[tfma_quality.STOI_IMPROVEMENT] > 0.05
    assert cleaned[tfma_quality.SCORED] == 2
    without_denoiser = _evaluate([_extract(clean + noise, clean)])  # passes the audio through
    assert without_denoiser[tfma_quality.PESQ_IMPROVEMENT] == pytest.approx(0.0, abs=1e-6)


def test_a_silent_reference_or_a_too_short_clip_is_undefined_and_one_without_a_reference_is_counted():
    clean = _speech()
    noise = 0.05 * np.random.default_rng(1).standard_normal(len(clean)).astype(np.float32)
    short = slice(0, int(0.2 * SR))  # under PESQ's quarter of a second
    result = _evaluate([_extract(noise, np.zeros_like(clean), 0.5 * noise),
                        _extract(clean + noise, np.zeros_like(clean), clean, has_clean=0),
                        _extract((clean + noise)[short], clean[short], clean[short])])
    assert result[tfma_quality.UNDEFINED] == 2 and result[tfma_quality.NO_REFERENCE] == 1
    assert result[tfma_quality.SCORED] == 0 and tfma_quality.PESQ_IMPROVEMENT not in result


def test_the_evaluator_computes_them_with_the_denoiser_and_gates_on_pesq_only_when_asked():
    from components.config import ConfigError, load_config
    from components.evaluation.evaluator import make_eval_config

    def metrics(*overrides):
        cfg = load_config(None, ["trainer.denoiser.enabled=true", *overrides])
        config = make_eval_config(cfg.evaluator, cfg.trainer, cfg.features)
        return {m.class_name: m for m in config.metrics_specs[0].metrics}

    ungated = metrics()
    assert {"PesqImprovement", "StoiImprovement"} <= set(ungated)
    assert not ungated["PesqImprovement"].per_slice_thresholds
    gated = metrics("evaluator.min_pesq_improvement=0.3")["PesqImprovement"].per_slice_thresholds
    assert gated[0].threshold.value_threshold.lower_bound.value == pytest.approx(0.3)
    assert "PesqImprovement" not in metrics("evaluator.perceptual_metrics=false")
    with pytest.raises(ConfigError, match="min_pesq_improvement"):
        load_config(None, ["evaluator.min_pesq_improvement=0.3"])  # no denoiser to gate
