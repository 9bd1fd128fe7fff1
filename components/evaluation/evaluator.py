"""TFMA configuration for the Evaluator: accuracy on the windows and per recording
(and, with the denoiser, SNR and SI-SNR improvement) on the test split, sliced, gated.

The model is blessed only when accuracy clears `evaluator.min_accuracy` and does
not fall below the latest blessed model's by more than `max_accuracy_regression`
(not for the `denoise` objective, which leaves the classifier untrained);
with `min_si_snr_improvement_db` set, the same holds for the SI-SNR improvement
(floor, and at most `max_si_snr_regression_db` below the baseline's), and with
`min_pesq_improvement` for the PESQ improvement (`perceptual_metrics`: PESQ and STOI, tfma_quality).

The held-out evaluation (`evaluator.heldout_base`, HELDOUT_SPLIT) computes the same
metrics ungated, so its slices may include the clean examples (`snr_bucket`
no_reference) and cross the channel with the SNR bucket.
"""
from typing import List

import tensorflow_model_analysis as tfma

from components import features
from components.config import EvaluatorConfig, FeatureConfig, TrainerConfig
from components.evaluation import tfma_quality, tfma_recording, tfma_snr
from components.transform.preprocessing import snr_bucket_names

HELDOUT_SPLIT = "heldout"  # the one split of the held-out ExampleGen


def _overall_gate(floor: float, max_regression: float) -> List[tfma.PerSliceMetricThreshold]:
    # The gate is on the whole split; per-slice figures are reported, not gated (a
    # plain `threshold` would apply to every slice, and one small noisy slice would veto).
    return [tfma.PerSliceMetricThreshold(
        slicing_specs=[tfma.SlicingSpec()],
        threshold=tfma.MetricThreshold(
            value_threshold=tfma.GenericValueThreshold(lower_bound={"value": floor}),
            change_threshold=tfma.GenericChangeThreshold(
                direction=tfma.MetricDirection.HIGHER_IS_BETTER,
                absolute={"value": -max_regression - 1e-10})))]


def _slicing_specs(cfg: EvaluatorConfig, feature_cfg: FeatureConfig, snr_metrics: bool) -> List[tfma.SlicingSpec]:
    """Overall, then one slice per value of each slice feature.

    TFMA 0.47 fails a gated metric that is missing from *any* slice ("Metric not
    found"), even with an overall-only threshold, and a slice with no clean reference
    has no SNR improvement. So with the SNR metrics on, feature slices hold only the
    examples with a reference (`has_clean` = 1), and the SNR buckets are listed value
    by value without NO_REFERENCE."""
    specs = [tfma.SlicingSpec()]
    with_reference = {features.HAS_CLEAN: "1"} if snr_metrics else {}
    for key in cfg.slice_features:
        if key == features.SNR_BUCKET:
            specs += [tfma.SlicingSpec(feature_values={key: name})
                      for name in snr_bucket_names(feature_cfg.snr_bucket_edges_db)]
        else:
            specs.append(tfma.SlicingSpec(feature_keys=[key], feature_values=with_reference))
    return specs


def _heldout_slicing_specs(cfg: EvaluatorConfig) -> List[tfma.SlicingSpec]:
    """Overall, each slice feature alone (the SNR bucket with its no_reference: the clean
    examples), and the channel crossed with the SNR bucket."""
    specs = [tfma.SlicingSpec()] + [tfma.SlicingSpec(feature_keys=[key]) for key in cfg.slice_features]
    if features.CHANNEL in cfg.slice_features and features.SNR_BUCKET in cfg.slice_features:
        specs.append(tfma.SlicingSpec(feature_keys=[features.CHANNEL, features.SNR_BUCKET]))
    return specs


def make_eval_config(cfg: EvaluatorConfig, trainer: TrainerConfig, feature_cfg: FeatureConfig,
                     heldout: bool = False) -> tfma.EvalConfig:
    """The Evaluator's TFMA config; `heldout`: the held-out evaluation's (no gates, no baseline)."""
    # The denoise objective leaves the classifier untrained: its accuracy is reported, not gated.
    accuracy_gate = ([] if trainer.objective == "denoise" or heldout else
                     _overall_gate(cfg.min_accuracy, cfg.max_accuracy_regression))
    metrics = [
        tfma.MetricConfig(class_name="SparseCategoricalAccuracy", per_slice_thresholds=accuracy_gate),
        tfma.MetricConfig(class_name="ExampleCount"),
        tfma.MetricConfig(class_name="SparseCategoricalCrossentropy"),
        tfma.MetricConfig(class_name=tfma_recording.RecordingAccuracy.__name__, module=tfma_recording.__name__),
        # Counts per (true, predicted) class: the run report's confusion matrix and per-class recall.
        tfma.MetricConfig(class_name="MultiClassConfusionMatrixPlot"),
    ]
    if trainer.denoiser.enabled:
        def gate(floor, max_regression):  # none on the held-out evaluation, none without a floor
            return [] if floor is None or heldout else _overall_gate(floor, max_regression)

        metrics += [
            tfma.MetricConfig(class_name=tfma_snr.SiSnrImprovement.__name__, module=tfma_snr.__name__,
                              per_slice_thresholds=gate(cfg.min_si_snr_improvement_db,
                                                        cfg.max_si_snr_regression_db)),
            tfma.MetricConfig(class_name=tfma_snr.SnrImprovement.__name__, module=tfma_snr.__name__)]
        if cfg.perceptual_metrics:
            metrics += [
                tfma.MetricConfig(class_name=tfma_quality.PesqImprovement.__name__, module=tfma_quality.__name__,
                                  per_slice_thresholds=gate(cfg.min_pesq_improvement, cfg.max_pesq_regression)),
                tfma.MetricConfig(class_name=tfma_quality.StoiImprovement.__name__, module=tfma_quality.__name__)]
    return tfma.EvalConfig(
        model_specs=[tfma.ModelSpec(
            signature_name="serving_default",
            label_key=features.LABEL_ID,
            prediction_key=features.OUT_PROBABILITIES,
            preprocessing_function_names=["transform_features"])],
        metrics_specs=[tfma.MetricsSpec(metrics=metrics)],
        slicing_specs=(_heldout_slicing_specs(cfg) if heldout else
                       _slicing_specs(cfg, feature_cfg, trainer.denoiser.enabled)))
