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

Used from the EvalConfig as MetricConfig(class_name=..., module=__name__).
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

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


def _computations(name: str = SNR_IMPROVEMENT, eval_config=None, model_names: Optional[List[str]] = None,
                  output_names=None, sub_keys=None, aggregation_type=None, class_weights=None,
                  example_weighted: bool = False, query_key=None, **_) -> metric_types.MetricComputations:
    del name, eval_config, output_names, sub_keys, aggregation_type, class_weights, query_key
    computations = []
    for model_name in model_names or [""]:
        keys = {metric: metric_types.MetricKey(name=metric, model_name=model_name,
                                               example_weighted=example_weighted)
                for metric in (SNR_IMPROVEMENT, SI_SNR_IMPROVEMENT) + _COUNTS}
        # Same combiner class and keys for both metric classes: TFMA runs it once.
        computations.append(metric_types.MetricComputation(
            keys=list(keys.values()),
            preprocessors=[metric_types.TransformedFeaturePreprocessor(
                feature_keys=list(_FEATURES), model_names=[model_name] if model_name else None)],
            combiner=_ImprovementCombiner(keys, model_name)))
    return computations


class SnrImprovement(metric_types.Metric):
    """Mean SNR improvement (dB) over scored examples; also reports the counts."""

    def __init__(self, name: str = SNR_IMPROVEMENT):
        super().__init__(_computations, name=name)


class SiSnrImprovement(metric_types.Metric):
    """Mean SI-SNR improvement (dB) over scored examples; also reports the counts."""

    def __init__(self, name: str = SI_SNR_IMPROVEMENT):
        super().__init__(_computations, name=name)


def score_example(noisy: np.ndarray, clean: np.ndarray, enhanced: np.ndarray, num_samples: Any):
    """(SNR improvement, SI-SNR improvement) of one example, None where undefined."""
    n = int(np.ravel(num_samples)[0])
    noisy, clean, enhanced = (np.ravel(a)[:n] for a in (noisy, clean, enhanced))
    return (snr_metrics.improvement_db(snr_metrics.snr_db, clean, noisy, enhanced),
            snr_metrics.improvement_db(snr_metrics.si_snr_db, clean, noisy, enhanced))


class _ImprovementCombiner(beam.CombineFn):
    """Accumulator: [sum SNRi, sum SI-SNRi, scored, no reference, undefined]."""

    def __init__(self, keys: Dict[str, metric_types.MetricKey], model_name: str):
        self._keys = keys
        self._model_name = model_name

    def create_accumulator(self) -> List[float]:
        return [0.0, 0.0, 0, 0, 0]

    def add_input(self, accumulator: List[float], element: metric_types.StandardMetricInputs) -> List[float]:
        name = self._model_name or None
        transformed = element.get_transformed_features(name) or {}
        predictions = element.get_predictions(name)
        if not int(np.ravel(transformed[features.HAS_CLEAN])[0]):
            accumulator[3] += 1
            return accumulator
        noisy = transformed[features.WAVEFORM]
        # A model without a denoiser (e.g. a baseline blessed before it existed) passes
        # the audio through: its improvement is 0 dB, which is what it delivers.
        enhanced = (predictions[features.OUT_ENHANCED]
                    if isinstance(predictions, dict) and features.OUT_ENHANCED in predictions else noisy)
        snri, si_snri = score_example(noisy, transformed[features.CLEAN_WAVEFORM], enhanced,
                                      transformed[features.NUM_SAMPLES])
        if snri is None or si_snri is None:
            accumulator[4] += 1
        else:
            accumulator[0] += snri
            accumulator[1] += si_snri
            accumulator[2] += 1
        return accumulator

    def merge_accumulators(self, accumulators: Iterable[List[float]]) -> List[float]:
        result = self.create_accumulator()
        for acc in accumulators:
            result = [a + b for a, b in zip(result, acc)]
        return result

    def extract_output(self, accumulator: List[float]) -> Dict[metric_types.MetricKey, Any]:
        snr_sum, si_snr_sum = accumulator[:2]
        out = {self._keys[name]: count for name, count in zip(_COUNTS, accumulator[2:])}
        scored = accumulator[2]
        if scored:
            out[self._keys[SNR_IMPROVEMENT]] = snr_sum / scored
            out[self._keys[SI_SNR_IMPROVEMENT]] = si_snr_sum / scored
        return out
