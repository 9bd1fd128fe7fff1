"""Per-recording accuracy: window probabilities averaged per recording, weighted by
window length, against the label that covers most of the recording's length."""
import numpy as np
import pytest
from tensorflow_model_analysis.metrics import metric_types

from components import features
from components.evaluation import tfma_recording


def _window(source, seconds, label, probabilities, as_dict=False):
    predictions = np.array(probabilities, np.float32)
    if as_dict:  # a model with several outputs, as the denoiser's
        predictions = {features.OUT_PROBABILITIES: predictions, features.OUT_ENHANCED: np.zeros(16, np.float32)}
    return metric_types.StandardMetricInputs({
        "labels": np.array([label]), "predictions": predictions,
        "features": {features.SOURCE: np.array([source.encode()]),
                     features.DURATION_S: np.array([seconds], np.float32)}})


def _accuracy(windows, split=2):
    computation, = tfma_recording.RecordingAccuracy().computations()
    combiner = computation.combiner
    # Two partial accumulators merged, as Beam combines them across workers.
    parts = [combiner.create_accumulator() for _ in range(split)]
    for i, window in enumerate(windows):
        parts[i % split] = combiner.add_input(parts[i % split], window)
    out = combiner.extract_output(combiner.merge_accumulators(parts))
    return {key.name: value for key, value in out.items()}


def test_a_recording_is_right_when_its_length_weighted_mean_probability_picks_its_label():
    windows = [
        # a.wav: a long window says class 0, two short ones say class 1: weighted, class 0.
        _window("a.wav", 10.0, 0, [0.9, 0.1]), _window("a.wav", 1.0, 0, [0.2, 0.8]),
        _window("a.wav", 1.0, 0, [0.2, 0.8]),
        # b.wav: wrong on both windows (a model that also outputs enhanced audio).
        _window("b.wav", 2.0, 1, [0.7, 0.3], as_dict=True), _window("b.wav", 2.0, 1, [0.6, 0.4], as_dict=True),
    ]
    out = _accuracy(windows)
    assert out[tfma_recording.RECORDING_COUNT] == 2
    assert out[tfma_recording.RECORDING_ACCURACY] == pytest.approx(0.5)


def test_a_call_with_several_labels_counts_as_the_label_covering_most_of_its_length():
    windows = [_window("call.wav", 2.0, 2, [0.1, 0.1, 0.8]), _window("call.wav", 2.0, 2, [0.1, 0.2, 0.7]),
               _window("call.wav", 2.0, 0, [0.6, 0.2, 0.2])]
    assert _accuracy(windows)[tfma_recording.RECORDING_ACCURACY] == 1.0
    # Every window right, one long window against two short tails: the long one's label.
    windows = [_window("tails.wav", 4.0, 0, [1.0, 0.0]), _window("tails.wav", 1.0, 1, [0.0, 1.0]),
               _window("tails.wav", 1.0, 1, [0.0, 1.0])]
    assert _accuracy(windows)[tfma_recording.RECORDING_ACCURACY] == 1.0


def test_a_slice_without_windows_reports_no_accuracy():
    assert _accuracy([]) == {tfma_recording.RECORDING_COUNT: 0}
