"""TFMA metrics for the denoiser: SNR and SI-SNR improvement in dB, enhanced versus
noisy, both against the clean reference, averaged over the examples where they are
defined.

Per example the combiner reads the model's `enhanced` output and, from the
`transform_features` signature, the noisy WAVEFORM, the CLEAN_WAVEFORM, HAS_CLEAN
and NUM_SAMPLES, and scores it with `snr_metrics` (tested against fast_bss_eval).
A model without the `enhanced` output (a classifier-only baseline) is scored as
passing the audio through: 0 dB. Examples without a clean reference, and undefined cases (silent reference, perfect
estimate), are left out and counted (`snr_no_reference_examples`,
`snr_undefined_examples`); a slice with no
scored example gets no improvement value at all (never NaN or infinity), so a
threshold on it fails rather than passes.

`Improvements` is the family's shape, which components/evaluation/tfma_quality.py's PESQ and STOI share.
Used from the EvalConfig as MetricConfig(class_name=..., module=__name__).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import apache_beam as beam
import numpy as np
from tensorflow_model_analysis.metrics import metric_types

from components import features
from components.audio import snr as snr_metrics

SNR_IMPROVEMENT = "snr_improvement_db"
SI_SNR_IMPROVEMENT = "si_snr_improvement_db"
SCORED = "snr_scored_examples"
NO_REFERENCE = "snr_no_reference_examples"
UNDEFINED = "snr_undefined_examples"
_COUNTS = (SCORED, NO_REFERENCE, UNDEFINED)
_FEATURES = (features.WAVEFORM, features.CLEAN_WAVEFORM, features.HAS_CLEAN, features.NUM_SAMPLES)


class Improvements:
    """A family of per-example improvements scored by one combiner: their metric names, the names of
    its three counts, and scorer(noisy, clean, enhanced) -> a value or None per metric."""

    def __init__(self, metrics: Tuple[str, ...], counts: Tuple[str, str, str],
                 scorer: Callable[[np.ndarray, np.ndarray, np.ndarray], Tuple[Optional[float], ...]]):
        self.metrics, self.counts, self.scorer = metrics, counts, scorer

    def computations(self, name: str = "", eval_config=None, model_names: Optional[List[str]] = None,
                     output_names=None, sub_keys=None, aggregation_type=None, class_weights=None,
                     example_weighted: bool = False, query_key=None, **_) -> metric_types.MetricComputations:
        del name, eval_config, output_names, sub_keys, aggregation_type, class_weights, query_key
        computations = []
        for model_name in model_names or [""]:
            keys = {metric: metric_types.MetricKey(name=metric, model_name=model_name,
                                                   example_weighted=example_weighted)
                    for metric in self.metrics + self.counts}
            # Same combiner class and keys for every metric class of the family: TFMA runs it once.
            computations.append(metric_types.MetricComputation(
                keys=list(keys.values()),
                preprocessors=[metric_types.TransformedFeaturePreprocessor(
                    feature_keys=list(_FEATURES), model_names=[model_name] if model_name else None)],
                combiner=_ImprovementCombiner(keys, model_name, self)))
        return computations


def _cut(noisy: np.ndarray, clean: np.ndarray, enhanced: np.ndarray, num_samples: Any):
    n = int(np.ravel(num_samples)[0])
    return tuple(np.ravel(a)[:n] for a in (noisy, clean, enhanced))


def score_example(noisy: np.ndarray, clean: np.ndarray, enhanced: np.ndarray):
    """(SNR improvement, SI-SNR improvement) of one example, None where undefined."""
    return (snr_metrics.improvement_db(snr_metrics.snr_db, clean, noisy, enhanced),
            snr_metrics.improvement_db(snr_metrics.si_snr_db, clean, noisy, enhanced))


SNR_FAMILY = Improvements((SNR_IMPROVEMENT, SI_SNR_IMPROVEMENT), _COUNTS, score_example)


class SnrImprovement(metric_types.Metric):
    """Mean SNR improvement (dB) over scored examples; also reports the counts."""

    def __init__(self, name: str = SNR_IMPROVEMENT):
        super().__init__(SNR_FAMILY.computations, name=name)


class SiSnrImprovement(metric_types.Metric):
    """Mean SI-SNR improvement (dB) over scored examples; also reports the counts."""

    def __init__(self, name: str = SI_SNR_IMPROVEMENT):
        super().__init__(SNR_FAMILY.computations, name=name)


class _ImprovementCombiner(beam.CombineFn):
    """Accumulator: [sum of each of the family's metrics..., scored, no reference, undefined]."""

    def __init__(self, keys: Dict[str, metric_types.MetricKey], model_name: str, family: Improvements):
        self._keys = keys
        self._model_name = model_name
        self._family = family

    def create_accumulator(self) -> List[float]:
        return [0.0] * len(self._family.metrics) + [0, 0, 0]

    def add_input(self, accumulator: List[float], element: metric_types.StandardMetricInputs) -> List[float]:
        name = self._model_name or None
        transformed = element.get_transformed_features(name) or {}
        predictions = element.get_predictions(name)
        m = len(self._family.metrics)
        if not int(np.ravel(transformed[features.HAS_CLEAN])[0]):
            accumulator[m + 1] += 1
            return accumulator
        noisy = transformed[features.WAVEFORM]
        # A model without a denoiser (e.g. a baseline blessed before it existed) passes
        # the audio through: its improvement is 0, which is what it delivers.
        enhanced = (predictions[features.OUT_ENHANCED]
                    if isinstance(predictions, dict) and features.OUT_ENHANCED in predictions else noisy)
        values = self._family.scorer(*_cut(noisy, transformed[features.CLEAN_WAVEFORM], enhanced,
                                           transformed[features.NUM_SAMPLES]))
        if any(v is None for v in values):
            accumulator[m + 2] += 1
        else:
            for i, v in enumerate(values):
                accumulator[i] += v
            accumulator[m] += 1
        return accumulator

    def merge_accumulators(self, accumulators: Iterable[List[float]]) -> List[float]:
        result = self.create_accumulator()
        for acc in accumulators:
            result = [a + b for a, b in zip(result, acc)]
        return result

    def extract_output(self, accumulator: List[float]) -> Dict[metric_types.MetricKey, Any]:
        m = len(self._family.metrics)
        out = {self._keys[name]: count for name, count in zip(self._family.counts, accumulator[m:])}
        scored = accumulator[m]
        if scored:
            for name, total in zip(self._family.metrics, accumulator[:m]):
                out[self._keys[name]] = total / scored
        return out
