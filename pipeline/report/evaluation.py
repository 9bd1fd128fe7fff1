"""The report's evaluation section, from the Evaluator's TFMA output: the overall
metrics of the candidate and the baseline, each blessing check with its value and
bound, accuracy per class with the confusion matrix, and the metrics per slice
(noise kind, input-SNR bucket, channel); with the held-out evaluation, its figures beside
the test split's and its own slices."""
from __future__ import annotations

import re
from typing import Dict, List, Optional

import numpy as np
import tensorflow_model_analysis as tfma
import tensorflow_transform as tft
from google.protobuf import json_format

from components import features
from components.evaluation import tfma_quality, tfma_recording, tfma_snr
from pipeline import summary
from pipeline.report import plots
from pipeline.report.model import Item, Section

ACCURACY = "sparse_categorical_accuracy"
_SLICE_COLUMNS = ("example_count", ACCURACY, tfma_snr.SI_SNR_IMPROVEMENT, tfma_snr.SNR_IMPROVEMENT,
                  tfma_quality.PESQ_IMPROVEMENT, tfma_quality.STOI_IMPROVEMENT)
_CONFUSION = "multiClassConfusionMatrixAtThresholds"


def _overall(run: summary.RunSummary) -> Item:
    """Candidate, baseline and change per metric; TFMA reports the change (candidate -
    baseline) as <metric>_diff when there is a baseline, so the baseline is candidate - change."""
    rows = []
    for name, value in sorted(run.metrics.items()):
        if name.endswith("_diff"):
            continue
        change = run.metrics.get(f"{name}_diff")
        rows.append({"metric": name, "candidate": round(value, 4),
                     "baseline": None if change is None else round(value - change, 4),
                     "change": None if change is None else round(change, 4)})
    has_baseline = any(row["change"] is not None for row in rows)
    return Item("metrics", "Test-split metrics: the candidate and the baseline (the latest blessed model)", rows,
                caption="" if has_baseline else "no blessed model before this one: no baseline")


def _checks(run: summary.RunSummary, result_uri: str) -> Item:
    """Each threshold of the EvalConfig the Evaluator ran with, its value, bound and outcome."""
    verdict = "blessed" if run.blessed else "not blessed"
    pushed = f"pushed to {run.pushed_destination}" if run.pushed else "not pushed"
    title = f"Blessing: {verdict}, {pushed}"
    execution = run.executions.get("Evaluator")
    if execution is None or "eval_config" not in execution.custom_properties:
        return Item("blessing_checks", title, [], caption="the Evaluator's settings are not in ML Metadata")
    eval_config = json_format.Parse(execution.custom_properties["eval_config"].string_value, tfma.EvalConfig())
    failed = {(f.metric_key.name, f.metric_key.is_diff)
              for per_slice in tfma.load_validation_result(result_uri).metric_validations_per_slice
              for f in per_slice.failures}
    rows = []
    thresholds = tfma.metrics.metric_thresholds_from_metrics_specs(eval_config.metrics_specs, eval_config=eval_config)
    for key, bounds in sorted(thresholds.items(), key=lambda kv: (kv[0].name, kv[0].is_diff)):
        for _, bound in bounds:
            value = run.metrics.get(f"{key.name}_diff" if key.is_diff else key.name)
            kind, limit = (("change vs baseline", bound.absolute.value) if key.is_diff
                           else ("floor", bound.lower_bound.value))
            outcome = ("failed" if (key.name, key.is_diff) in failed else
                       "not checked (no baseline)" if value is None else "passed")
            rows.append({"metric": key.name, "check": kind, "value": None if value is None else round(value, 4),
                         "bound": f">= {limit:.4g}", "outcome": outcome})
    return Item("blessing_checks", title, rows)


def _label_names(run: summary.RunSummary) -> Optional[List[str]]:
    graph = (run.artifacts.get("Transform", {}).get("transform_graph")
             or run.inputs.get("Trainer", {}).get("transform_graph") or [])
    if not graph:
        return None
    return [v.decode() if isinstance(v, bytes) else v
            for v in tft.TFTransformOutput(graph[0].uri).vocabulary_by_name(features.LABEL_VOCAB)]


def _confusion(result: tfma.EvalResult, labels: List[str]) -> List[Item]:
    overall = next((plots_ for key, plots_ in result.plots or [] if key == ()), None)
    matrices = (overall or {}).get("", {}).get("", {}).get(_CONFUSION, {}).get("matrices", [])
    if not matrices:
        return []
    matrix, unknown = np.zeros((len(labels), len(labels))), 0.0
    for entry in matrices[0].get("entries", []):  # proto JSON leaves out zeros: class 0, empty cells
        actual, predicted = int(entry.get("actualClassId", 0)), int(entry.get("predictedClassId", 0))
        count = float(entry.get("numWeightedExamples", 0.0))
        if 0 <= actual < len(labels) and 0 <= predicted < len(labels):
            matrix[actual, predicted] += count
        else:  # -1: a test label the training split never had (the vocabulary is the training split's)
            unknown += count
    cells = [{"true": labels[i], "predicted": labels[j], "examples": matrix[i, j]}
             for i in range(len(labels)) for j in range(len(labels))]
    totals = matrix.sum(axis=1)
    recall = [{"label": name, "examples": totals[i],
               "recall": round(matrix[i, i] / totals[i], 4) if totals[i] else None} for i, name in enumerate(labels)]
    caption = (f"{unknown:g} test examples have a label the training split does not have: not in the matrix"
               if unknown else "")
    return [Item("confusion_matrix", "Confusion matrix (test split)", cells, plots.confusion(matrix, labels),
                 caption=caption),
            Item("recall_by_class", "Recall per class (test split)", recall,
                 plots.bars(recall, "label", ["recall"], "recall"))]


_BUCKET = re.compile(r"^(<|>=)?(-?\d+(?:\.\d+)?)(?:-(-?\d+(?:\.\d+)?))?$")


def _order(value: str):
    """Input-SNR buckets ("<0", "0-5", "5-10", ">=20", as transform.snr_bucket_names names
    them) by their edges; other values by name, after them."""
    found = _BUCKET.match(value)
    if not found:
        return 1, 0.0, 0, value
    return 0, float(found.group(2)), {"<": -1, None: 0, ">=": 1}[found.group(1)], value


def _columns(name: str) -> Dict[str, str]:
    """'has_clean=1,noise_kind=street, busy' -> {has_clean: 1, noise_kind: 'street, busy'}: a
    comma starts a new column only before a feature name and '='."""
    return dict(part.split("=", 1) for part in re.split(r",(?=[A-Za-z_]\w*=)", name))


def _slice_rows(slices: Dict[str, Dict[str, float]]) -> List[dict]:
    return [{"slice": name, **{column: round(values[column], 4) for column in _SLICE_COLUMNS if column in values}}
            for name, values in sorted(slices.items())]


def _slices(slices: Dict[str, Dict[str, float]], prefix: str = "", where: str = "test split") -> List[Item]:
    """The slice table, and a bar chart per single-feature slicing (SNR improvements where
    the slices have them, else accuracy); item names start with `prefix`."""
    rows = _slice_rows(slices)
    items = [Item(f"{prefix}metrics_by_slice", f"Metrics per slice ({where})", rows)] if rows else []
    by_feature: Dict[str, List[dict]] = {}
    for row in rows:  # "has_clean=1,noise_kind=hum": has_clean only narrows the slice to scored examples
        columns = _columns(row["slice"])
        columns.pop(features.HAS_CLEAN, None)
        if len(columns) == 1:
            (feature, value), = columns.items()
            by_feature.setdefault(feature, []).append({**row, "slice": value})
    for feature, mine in sorted(by_feature.items()):
        mine.sort(key=lambda row: _order(row["slice"]))
        snr = [m for m in (tfma_snr.SI_SNR_IMPROVEMENT, tfma_snr.SNR_IMPROVEMENT) if any(m in row for row in mine)]
        series, unit = (snr, "dB") if snr else ([ACCURACY], "accuracy")
        items.append(Item(f"{prefix}by_{feature}", f"By {feature} ({where})", mine,
                          plots.bars(mine, "slice", series, unit)))
    return items


def _heldout(run: summary.RunSummary) -> List[Item]:
    """The generalization protocol's figures: in-domain (test split) and held-out side by
    side, held-out accuracy per condition, then the held-out slices."""
    held = run.heldout_metrics
    interval = summary.accuracy_interval_text(held)
    rows = [{"metric": m, "in_domain": round(run.metrics[m], 4) if m in run.metrics else None,
             "heldout": round(held[m], 4),
             "heldout_baseline": round(run.heldout_baseline(m), 4) if f"{m}_diff" in held else None}
            for m in _SLICE_COLUMNS if m in held]
    items = [Item("in_domain_vs_heldout", "In-domain (test split) and held-out conditions side by side", rows,
                  caption="held-out: voices, noise kinds and a channel the training never saw "
                          f"(evaluator.heldout_base: {run.heldout_corpus() or 'unknown'}; its validation part is "
                          "for tuning, its test part read once per reported configuration), for this model and "
                          "(heldout_baseline) the latest blessed one; reported, not gated"
                          + (f"; {interval}" if interval else ""))]
    single = [row for row in _slice_rows(run.heldout_slice_metrics) if "," not in row["slice"] and ACCURACY in row]
    single.sort(key=lambda row: (row["slice"].split("=")[0], _order(row["slice"].split("=", 1)[1])))
    if single:
        items.append(Item("heldout_accuracy", "Accuracy per held-out condition", single,
                          plots.bars(single, "slice", [ACCURACY], "accuracy"),
                          caption=f"snr_bucket={features.NO_REFERENCE}: the clean clips"))
    return items + _slices(run.heldout_slice_metrics, "heldout_", "held-out")


def section(run: summary.RunSummary) -> Section:
    out = Section("Evaluation")
    evaluation = run.artifacts.get("Evaluator", {}).get("evaluation", [])
    if not evaluation:
        out.notes.append("The Evaluator did not run in this run.")
        return out
    uri = evaluation[0].uri
    out.items += [_overall(run), _checks(run, uri)]
    labels = _label_names(run)
    if labels:
        # With a baseline TFX names the models candidate and baseline; TFMA then gives plots by name only.
        compared = bool(run.inputs.get("Evaluator", {}).get("baseline_model"))
        out.items += _confusion(tfma.load_eval_result(uri, model_name="candidate" if compared else None), labels)
    out.items += _slices(run.slice_metrics)
    if run.heldout_metrics:
        out.items += _heldout(run)
    else:
        out.notes.append("No held-out conditions in this run (evaluator.heldout_base): every figure here is "
                         "in-domain.")
    if tfma_recording.RECORDING_ACCURACY in run.metrics:
        out.notes.append(f"Per-recording accuracy (window probabilities averaged per source): "
                         f"{run.metrics[tfma_recording.RECORDING_ACCURACY]:.4f}.")
    return out
