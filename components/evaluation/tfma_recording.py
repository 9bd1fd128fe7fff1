"""TFMA metric: per-recording accuracy, the classifier's windows aggregated per recording.

Examples are windows of recordings (`source`). Per recording the combiner sums the
window probabilities, weighted by window length (as `components.serving.recording` does for
a whole recording), and counts the window labels; the recording's predicted label
is the argmax of the mean probabilities, its true label the one that covers most of its
windows' length (a call annotated with several labels counts as its dominant one). Reported:
`recording_accuracy` and `recording_count`. The accumulator holds one probability
vector per recording, so it grows with the recordings of a slice, not their length.

Used from the EvalConfig as MetricConfig(class_name="RecordingAccuracy", module=__name__).
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

import apache_beam as beam
import numpy as np
from tensorflow_model_analysis.metrics import metric_types

from components import features

RECORDING_ACCURACY = "recording_accuracy"
RECORDING_COUNT = "recording_count"
_FEATURES = (features.SOURCE, features.DURATION_S, features.TRACK)  # the track: with data.tracks=split


def _computations(name: str = RECORDING_ACCURACY, eval_config=None, model_names: Optional[List[str]] = None,
                  output_names=None, sub_keys=None, aggregation_type=None, class_weights=None,
                  example_weighted: bool = False, query_key=None, **_) -> metric_types.MetricComputations:
    del eval_config, output_names, sub_keys, aggregation_type, class_weights, query_key
    computations = []
    for model_name in model_names or [""]:
        keys = {metric: metric_types.MetricKey(name=metric, model_name=model_name,
                                               example_weighted=example_weighted)
                for metric in (name, RECORDING_COUNT)}
        computations.append(metric_types.MetricComputation(
            keys=list(keys.values()),
            preprocessors=[metric_types.FeaturePreprocessor(
                feature_keys=list(_FEATURES), model_names=[model_name] if model_name else None)],
            combiner=_RecordingCombiner(keys[name], keys[RECORDING_COUNT], model_name)))
    return computations


class RecordingAccuracy(metric_types.Metric):
    """Accuracy of the per-recording aggregate label over the recordings of a slice."""

    def __init__(self, name: str = RECORDING_ACCURACY):
        super().__init__(_computations, name=name)


def _scalar(value: Any):
    return np.ravel(value)[0]


class _RecordingCombiner(beam.CombineFn):
    """Accumulator: {source: [length-weighted probability sum, {label id: window seconds}]}."""

    def __init__(self, accuracy_key: metric_types.MetricKey, count_key: metric_types.MetricKey, model_name: str):
        self._accuracy_key, self._count_key = accuracy_key, count_key
        self._model_name = model_name

    def create_accumulator(self) -> Dict[str, list]:
        return {}

    def add_input(self, accumulator: Dict[str, list], element: metric_types.StandardMetricInputs):
        name = self._model_name or None
        feats = element.features
        source = _scalar(feats[features.SOURCE])
        source = source.decode() if isinstance(source, bytes) else str(source)
        if feats.get(features.TRACK) is not None and np.size(feats[features.TRACK]):  # a stream per track
            source = f"{source}#track{int(_scalar(feats[features.TRACK]))}"
        weight = float(_scalar(feats[features.DURATION_S]))
        predictions = element.get_predictions(name)
        if isinstance(predictions, dict):  # the model's outputs by name (with the denoiser: `enhanced` too)
            predictions = predictions[features.OUT_PROBABILITIES]
        probabilities = np.asarray(predictions, np.float64).ravel()
        label = int(_scalar(element.get_labels(name)))
        entry = accumulator.setdefault(source, [np.zeros_like(probabilities), {}])
        entry[0] = entry[0] + weight * probabilities
        entry[1][label] = entry[1].get(label, 0.0) + weight
        return accumulator

    def merge_accumulators(self, accumulators: Iterable[Dict[str, list]]) -> Dict[str, list]:
        result: Dict[str, list] = {}
        for acc in accumulators:
            for source, (probs, labels) in acc.items():
                entry = result.setdefault(source, [np.zeros_like(probs), {}])
                entry[0] = entry[0] + probs
                for label, count in labels.items():
                    entry[1][label] = entry[1].get(label, 0.0) + count
        return result

    def extract_output(self, accumulator: Dict[str, list]) -> Dict[metric_types.MetricKey, Any]:
        if not accumulator:
            return {self._count_key: 0}
        correct = sum(int(np.argmax(probs)) == max(sorted(labels), key=labels.get)
                      for probs, labels in accumulator.values())
        return {self._accuracy_key: correct / len(accumulator), self._count_key: len(accumulator)}
