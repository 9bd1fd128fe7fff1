"""The report's data section: what went in (files, seconds, examples per split and
label, rejects and anomalies by reason, window durations), from the ExampleGen's
artifact properties and rejects list and StatisticsGen's TFDV statistics."""
from __future__ import annotations

import collections
import json
import os
from typing import Dict, List

import tensorflow as tf
import tensorflow_data_validation as tfdv
from tensorflow_metadata.proto.v0 import statistics_pb2

from components import features
from pipeline import summary
from pipeline.report import plots
from pipeline.report.model import Item, Section

SPLITS = ("train", "eval", "test")


def _split_stats(run: summary.RunSummary) -> Dict[str, statistics_pb2.DatasetFeatureStatistics]:
    stats = run.artifacts.get("StatisticsGen", {}).get("statistics", [])
    out = {}
    for split in SPLITS:
        path = os.path.join(stats[0].uri, f"Split-{split}", "FeatureStats.pb") if stats else ""
        if path and tf.io.gfile.exists(path):
            out[split] = tfdv.load_stats_binary(path).datasets[0]
    return out


def _feature(dataset: statistics_pb2.DatasetFeatureStatistics, name: str):
    return next((f for f in dataset.features if list(f.path.step) == [name]), None)


def _inputs(run: summary.RunSummary) -> Item:
    rows = [{"what": "input files", "value": run.input_files}, {"what": "rejected files", "value": run.rejected}]
    rows += [{"what": key.replace("_", " "), "value": round(value, 2)} for key, value in run.seconds.items()]
    rows += [{"what": f"examples in {split}", "value": count} for split, count in run.split_counts.items()]
    return Item("inputs", "Files, seconds and examples", rows)


def _labels(stats) -> List[Item]:
    counts: Dict[str, Dict[str, int]] = collections.defaultdict(dict)
    for split, dataset in stats.items():
        label = _feature(dataset, features.LABEL)
        for bucket in label.string_stats.rank_histogram.buckets if label else []:
            counts[bucket.label][split] = int(bucket.sample_count)
    rows = [{"label": name, **{split: by_split.get(split, 0) for split in stats}}
            for name, by_split in sorted(counts.items())]
    if not rows:
        return []
    return [Item("examples_by_label", "Examples per split and label", rows,
                 plots.bars(rows, "label", list(stats), "examples"))]


def _rejects(run: summary.RunSummary) -> List[Item]:
    files, seconds = collections.Counter(), collections.Counter()
    if run.rejects_file and tf.io.gfile.exists(run.rejects_file):
        with tf.io.gfile.GFile(run.rejects_file) as f:
            for line in f:  # one JSON object a rejected file; streamed, the list can be long
                reject = json.loads(line)
                files[reject["reason"]] += 1
                seconds[reject["reason"]] += reject.get("seconds") or 0.0
    rows = [{"reason": reason, "files": n, "seconds": round(seconds[reason], 2)} for reason, n in files.most_common()]
    dropped = [{"reason": reason, "seconds": round(value, 2)}
               for reason, value in sorted(run.dropped_by_reason.items())]
    items = [Item("rejects_by_reason", "Rejected files by reason", rows,
                  caption=f"every rejected file with its reason: {run.rejects_file}" if rows else "no file rejected")]
    if dropped:
        items.append(Item("dropped_seconds_by_reason", "Seconds of accepted files left out of the examples, by reason",
                          dropped))
    anomalies = [{"split": split, "anomaly": anomaly} for split, found in sorted(run.anomalies.items())
                 for anomaly in found]
    items.append(Item("anomalies", "Anomalies (ExampleValidator against the schema)", anomalies,
                      caption="" if anomalies else "no anomalies"))
    return items


def _durations(stats) -> List[Item]:
    rows = []
    for split, dataset in stats.items():
        duration = _feature(dataset, features.DURATION_S)
        histograms = duration.num_stats.histograms if duration else []
        standard = next((h for h in histograms if h.type == statistics_pb2.Histogram.STANDARD), None)
        for bucket in standard.buckets if standard else []:
            rows.append({"series": split, "low": round(bucket.low_value, 4), "high": round(bucket.high_value, 4),
                         "count": round(bucket.sample_count, 2)})
    if not rows:
        return []
    return [Item("window_durations", "Example durations (s)", rows, plots.histogram(rows, "seconds"),
                 caption="TFDV's histogram of each split's duration_s: one example per window of a recording")]


def section(run: summary.RunSummary) -> Section:
    stats = _split_stats(run)
    items = [_inputs(run), *_labels(stats), *_rejects(run), *_durations(stats)]
    return Section("Data", items)
