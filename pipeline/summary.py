"""Reads the outcome of the latest pipeline run from ML Metadata and its artifacts.

Used by the local runner to print its closing summary and by the end-to-end test
to check what ran; everything comes from MLMD, TFDV statistics and TFMA results.
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Dict, List, Optional, Tuple, Union

import tensorflow as tf
import tensorflow_data_validation as tfdv
import tensorflow_model_analysis as tfma
from ml_metadata.metadata_store import metadata_store
from ml_metadata.proto import metadata_store_pb2
from scipy import stats
from tfx.orchestration import metadata

from components import features
from components.evaluation import tfma_quality, tfma_recording, tfma_snr
from components.validation import schema

Event = metadata_store_pb2.Event
_SLICE_COLUMNS = ("example_count", "sparse_categorical_accuracy", tfma_recording.RECORDING_ACCURACY,
                  tfma_snr.SNR_IMPROVEMENT,
                  tfma_snr.SI_SNR_IMPROVEMENT, tfma_quality.PESQ_IMPROVEMENT, tfma_quality.STOI_IMPROVEMENT,
                  tfma_snr.SCORED, tfma_snr.UNDEFINED)


_SIDE_BY_SIDE = ("example_count", "sparse_categorical_accuracy", tfma_snr.SI_SNR_IMPROVEMENT,
                 tfma_snr.SNR_IMPROVEMENT, tfma_quality.PESQ_IMPROVEMENT, tfma_quality.STOI_IMPROVEMENT)


def accuracy_interval(accuracy: float, examples: float, confidence: float = 0.95) -> Tuple[float, float]:
    """The Wilson score interval of an accuracy read on `examples` examples: how far the figure can move with
    the sample of examples alone. It understates the real spread: the examples come from a few voices (not
    independent draws), and a retrained model moves the figure further (the training run's own spread)."""
    n = int(round(examples))
    return tuple(stats.binomtest(int(round(accuracy * n)), n).proportion_ci(confidence, method="wilson"))


def accuracy_interval_text(metrics: Dict[str, float]) -> str:
    if "sparse_categorical_accuracy" not in metrics or not metrics.get("example_count"):
        return ""
    low, high = accuracy_interval(metrics["sparse_categorical_accuracy"], metrics["example_count"])
    return (f"held-out accuracy, 95 % interval from its {int(metrics['example_count'])} examples alone (Wilson): "
            f"{low:.3f}-{high:.3f}")


def _slice_table(title: str, slices: Dict[str, Dict[str, float]]) -> List[str]:
    shown = [m for m in _SLICE_COLUMNS if any(m in v for v in slices.values())]
    if not shown:
        return []
    return [f"  {title}: " + " | ".join(shown)] + [
        f"    {name}: " + " | ".join(f"{values[m]:.4g}" if m in values else "-" for m in shown)
        for name, values in sorted(slices.items())]


_SECONDS = ("seconds_in", "seconds_in_examples", "seconds_dropped", "seconds_rejected")


@dataclasses.dataclass
class RunSummary:
    run_id: str
    node_states: Dict[str, str]  # node id -> last execution state (COMPLETE, CACHED, FAILED...)
    artifacts: Dict[str, Dict[str, List[metadata_store_pb2.Artifact]]]  # node -> output key -> artifacts
    inputs: Dict[str, Dict[str, List[metadata_store_pb2.Artifact]]]  # node -> input key -> artifacts
    split_counts: Dict[str, int]
    input_files: int
    rejected: int
    rejects_file: str
    seconds: Dict[str, float]  # seconds_in, seconds_in_examples, seconds_dropped, seconds_rejected
    dropped_by_reason: Dict[str, float]
    rejected_unknown: int  # rejected before their header was read
    metrics: Dict[str, float]  # overall-slice metrics of the Evaluator
    slice_metrics: Dict[str, Dict[str, float]]  # "feature=value" -> metrics of that slice
    anomalies: Dict[str, List[str]]  # ExampleValidator's, {split: ["feature: description"]}
    failed_checks: List[str]  # the blessing checks the candidate failed, as "metric: reason"
    blessed: bool
    pushed: bool
    pushed_destination: Optional[str]
    # node -> its execution in this run (exec properties: the Evaluator's eval_config)
    executions: Dict[str, metadata_store_pb2.Execution] = dataclasses.field(default_factory=dict)
    report: Optional[str] = None  # the HTML run report's path, once written (pipeline/report)
    # The HeldoutEvaluator's (evaluator.heldout_base), like metrics and slice_metrics; empty without it.
    heldout_metrics: Dict[str, float] = dataclasses.field(default_factory=dict)
    heldout_slice_metrics: Dict[str, Dict[str, float]] = dataclasses.field(default_factory=dict)
    tracks: Optional[int] = None  # tracks of the files read (data.tracks=split: a stream per channel)
    calls: Optional[Dict[str, float]] = None  # call-level QA figures against the ground truth (calls_qa.py)

    def heldout_baseline(self, metric: str) -> Optional[float]:
        """The latest blessed model's held-out `metric` (TFMA gives the candidate's and the
        difference), or None without a baseline."""
        diff = self.heldout_metrics.get(f"{metric}_diff")
        return None if diff is None else self.heldout_metrics[metric] - diff

    def heldout_corpus(self) -> str:
        """The held-out corpus the HeldoutEvaluator read (its last two folders: `demo_heldout/test`
        says the part, docs/generalization.md), '' without one."""
        execution = self.executions.get("HeldoutExampleGen")
        base = str(prop(execution, "input_base") or "") if execution is not None else ""
        return "/".join(base.rstrip("/").split("/")[-2:])

    def text(self) -> str:
        lines = [f"tfx-audio run {self.run_id}"]
        lines.append("  components: " + ", ".join(f"{k}={v}" for k, v in sorted(self.node_states.items())))
        lines.append(f"  input files: {self.input_files} ({self.rejected} rejected"
                     + (f", see {self.rejects_file})" if self.rejected else ")")
                     + (f"; {self.tracks} tracks read"
                        if self.tracks and self.tracks != self.input_files - self.rejected else ""))
        if self.seconds:
            s = self.seconds
            reasons = ", ".join(f"{reason} {v:.1f}" for reason, v in sorted(self.dropped_by_reason.items()))
            lines.append(f"  seconds: in {s['seconds_in']:.1f} = in examples {s['seconds_in_examples']:.1f}"
                         f" + dropped {s['seconds_dropped']:.1f}" + (f" ({reasons})" if reasons else "")
                         + f" + rejected {s['seconds_rejected']:.1f}"
                         + (f" (and {self.rejected_unknown} rejected files of unknown length)"
                            if self.rejected_unknown else ""))
        for split, found in sorted(self.anomalies.items()):
            lines.append(f"  anomalies in {split}: " + "; ".join(found))
        lines.append("  examples per split: " + ", ".join(f"{k}={v}" for k, v in self.split_counts.items()))
        if self.metrics:
            lines.append("  test metrics: " + ", ".join(f"{k}={v:.4f}" for k, v in sorted(self.metrics.items())))
        lines += _slice_table("by slice", self.slice_metrics)
        if self.heldout_metrics:
            held = self.heldout_metrics
            lines.append(f"  in-domain (test) vs held-out ({self.heldout_corpus() or 'held-out'}): " + ", ".join(
                f"{m} {self.metrics.get(m, float('nan')):.4g} vs {held[m]:.4g}"
                + (f" (latest blessed model: {self.heldout_baseline(m):.4g})" if m + "_diff" in held else "")
                for m in _SIDE_BY_SIDE if m in held))
            interval = accuracy_interval_text(held)
            if interval:
                lines.append(f"  {interval}")
            lines += _slice_table("held-out by slice", self.heldout_slice_metrics)
        if self.calls:
            c = self.calls
            errors = ", ".join(f"{key[:-len('_mean_abs_error')]} {value:.2f} s" for key, value in c.items()
                               if key.endswith("_mean_abs_error"))
            lines.append(f"  calls (report; {int(c['calls'])} test calls against {features.CALLS_TRUTH_FILE}): "
                         f"every figure within 0.5 s in {c['within_0.5s_all']:.0%} of them; mean absolute error "
                         + errors + (f"; the customer's label right in {c['customer_label_accuracy']:.0%}"
                                     if "customer_label_accuracy" in c else ""))
        for check in self.failed_checks:
            lines.append(f"  failed check: {check}")
        if "Evaluator" in self.node_states:
            lines.append(f"  blessed: {self.blessed}; pushed: {self.pushed}"
                         + (f" -> {self.pushed_destination}" if self.pushed else ""))
        if self.report:
            lines.append(f"  report: {self.report}")
        return "\n".join(lines)


Metadata = Union[str, metadata_store_pb2.ConnectionConfig]  # a SQLite path, or any connection


def open_store(where: Metadata) -> metadata_store.MetadataStore:
    if isinstance(where, str):
        where = metadata.sqlite_metadata_connection_config(where)
    return metadata_store.MetadataStore(where)


def prop(artifact: metadata_store_pb2.Artifact, name: str):
    value = artifact.custom_properties.get(name) or artifact.properties.get(name)
    if value is None:
        return None
    return value.WhichOneof("value") and getattr(value, value.WhichOneof("value"))


def _describe(failure) -> str:
    """'metric: value ... (needs ...)' for one TFMA validation failure."""
    threshold = failure.metric_threshold
    if threshold.HasField("change_threshold"):
        what, bound = "change vs baseline", threshold.change_threshold.absolute.value
    else:
        what, bound = "value", threshold.value_threshold.lower_bound.value
    got = (f"{failure.metric_value.double_value.value:.4g}" if failure.HasField("metric_value")
           else failure.message or "missing")
    return f"{failure.metric_key.name}: {what} {got} (needs >= {bound:.4g})"


def example_counts(statistics_uri: str, splits) -> Dict[str, int]:
    """Examples per split, from StatisticsGen's statistics (the splits that have them, in order)."""
    counts = {}
    for split in splits:
        path = os.path.join(statistics_uri, f"Split-{split}", "FeatureStats.pb")
        if tf.io.gfile.exists(path):
            counts[split] = int(tfdv.load_stats_binary(path).datasets[0].num_examples)
    return counts


def evaluation_metrics(uri: str) -> Tuple[Dict[str, float], Dict[str, Dict[str, float]]]:
    """(overall metrics, {"feature=value[,feature=value]": metrics}) of a TFMA evaluation."""
    overall: Dict[str, float] = {}
    slices: Dict[str, Dict[str, float]] = {}
    for slice_key, by_output in tfma.load_eval_result(uri).slicing_metrics:
        values = {name: value["doubleValue"] for name, value in by_output[""][""].items() if "doubleValue" in value}
        if slice_key == ():
            overall = values
        else:
            slices[",".join(f"{k}={v}" for k, v in slice_key)] = values
    return overall, slices


def latest_run(where: Metadata, pipeline_name: str) -> RunSummary:
    store = open_store(where)
    runs = [c for c in store.get_contexts_by_type("pipeline_run") if c.name]
    if not runs:
        raise RuntimeError(f"no run of {pipeline_name} recorded in ML Metadata")
    run = max(runs, key=lambda c: c.create_time_since_epoch)
    node_states: Dict[str, str] = {}
    executions: Dict[str, metadata_store_pb2.Execution] = {}
    artifacts: Dict[str, Dict[str, List[metadata_store_pb2.Artifact]]] = {}
    inputs: Dict[str, Dict[str, List[metadata_store_pb2.Artifact]]] = {}
    for execution in sorted(store.get_executions_by_context(run.id), key=lambda e: e.id):
        nodes = [c.name for c in store.get_contexts_by_execution(execution.id)
                 if c.name.startswith(pipeline_name + ".")]
        node = nodes[0][len(pipeline_name) + 1:] if nodes else str(execution.type)
        node_states[node] = metadata_store_pb2.Execution.State.Name(execution.last_known_state)
        executions[node] = execution
        events = store.get_events_by_execution_ids([execution.id])
        by_id = {a.id: a for a in store.get_artifacts_by_id([e.artifact_id for e in events])}
        artifacts[node], inputs[node] = {}, {}
        for event in sorted(events, key=lambda e: [s.index for s in e.path.steps if s.HasField("index")]):
            # (in each key's order) Resolver nodes record what they resolve as INTERNAL_OUTPUT.
            if event.type in (Event.OUTPUT, Event.INTERNAL_OUTPUT):
                keyed = artifacts[node]
            elif event.type == Event.INPUT:
                keyed = inputs[node]
            else:
                continue
            key = event.path.steps[0].key if event.path.steps else "output"
            keyed.setdefault(key, []).append(by_id[event.artifact_id])

    examples = artifacts.get("WavExampleGen", {}).get("examples", [])
    stats = artifacts.get("StatisticsGen", {}).get("statistics", [])
    split_counts = example_counts(stats[0].uri, ("train", "eval", "test")) if stats else {}
    for held in artifacts.get("HeldoutExampleGen", {}).get("examples", []):  # no StatisticsGen there
        split_counts.update({name: int(size["examples"])
                             for name, size in json.loads(prop(held, "split_sizes") or "{}").items()})
    anomalies: Dict[str, List[str]] = {}
    for validated in artifacts.get("ExampleValidator", {}).get("anomalies", []):
        names = json.loads(prop(validated, "split_names") or "[]")
        anomalies.update(schema.read_anomalies(validated.uri, names))
    failed_checks: List[str] = []
    evaluation = artifacts.get("Evaluator", {}).get("evaluation", [])
    metrics, slice_metrics = evaluation_metrics(evaluation[0].uri) if evaluation else ({}, {})
    heldout = artifacts.get("HeldoutEvaluator", {}).get("evaluation", [])
    heldout_metrics, heldout_slices = evaluation_metrics(heldout[0].uri) if heldout else ({}, {})
    if evaluation:
        validation = tfma.load_validation_result(evaluation[0].uri)
        for per_slice in validation.metric_validations_per_slice:
            for failure in per_slice.failures:
                failed_checks.append(_describe(failure))
    blessing = artifacts.get("Evaluator", {}).get("blessing", [])
    pushed_model = artifacts.get("Pusher", {}).get("pushed_model", [])
    pushed = bool(pushed_model and prop(pushed_model[0], "pushed"))
    return RunSummary(
        run_id=run.name, node_states=node_states, artifacts=artifacts, inputs=inputs, split_counts=split_counts,
        input_files=int(prop(examples[0], "num_input_files") or 0) if examples else 0,
        tracks=int(prop(examples[0], "num_tracks") or 0) if examples else None,
        rejected=int(prop(examples[0], "num_rejected") or 0) if examples else 0,
        rejects_file=str(prop(examples[0], "rejects_file") or "") if examples else "",
        seconds={key: float(prop(examples[0], key) or 0.0) for key in _SECONDS} if examples else {},
        dropped_by_reason=json.loads(prop(examples[0], "seconds_dropped_by_reason") or "{}") if examples else {},
        rejected_unknown=int(prop(examples[0], "rejected_of_unknown_length") or 0) if examples else 0,
        anomalies=anomalies, metrics=metrics, slice_metrics=slice_metrics, failed_checks=failed_checks,
        heldout_metrics=heldout_metrics, heldout_slice_metrics=heldout_slices,
        blessed=bool(blessing and prop(blessing[0], "blessed")),
        pushed=pushed,
        pushed_destination=str(prop(pushed_model[0], "pushed_destination")) if pushed else None,
        executions=executions)
