"""TFMA configuration for the Evaluator: accuracy on the test split, sliced, gated.

The model is blessed only when accuracy clears `evaluator.min_accuracy` and does
not fall below the latest blessed model's by more than `max_accuracy_regression`.
"""
import tensorflow_model_analysis as tfma

from components import features
from pipeline.config import EvaluatorConfig


def make_eval_config(cfg: EvaluatorConfig) -> tfma.EvalConfig:
    # The gate is on the whole split; per-slice figures are reported, not gated (a
    # plain `threshold` would apply to every slice, and one small noisy slice would veto).
    accuracy = tfma.MetricConfig(
        class_name="SparseCategoricalAccuracy",
        per_slice_thresholds=[tfma.PerSliceMetricThreshold(
            slicing_specs=[tfma.SlicingSpec()],
            threshold=tfma.MetricThreshold(
                value_threshold=tfma.GenericValueThreshold(lower_bound={"value": cfg.min_accuracy}),
                change_threshold=tfma.GenericChangeThreshold(
                    direction=tfma.MetricDirection.HIGHER_IS_BETTER,
                    absolute={"value": -cfg.max_accuracy_regression - 1e-10})))])
    return tfma.EvalConfig(
        model_specs=[tfma.ModelSpec(
            signature_name="serving_default",
            label_key=features.LABEL_ID,
            prediction_key=features.OUT_PROBABILITIES,
            preprocessing_function_names=["transform_features"])],
        metrics_specs=[tfma.MetricsSpec(metrics=[
            accuracy,
            tfma.MetricConfig(class_name="ExampleCount"),
            tfma.MetricConfig(class_name="SparseCategoricalCrossentropy"),
        ])],
        slicing_specs=[tfma.SlicingSpec()] + [
            tfma.SlicingSpec(feature_keys=[key]) for key in cfg.slice_features])
