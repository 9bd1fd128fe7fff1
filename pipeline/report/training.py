"""The report's training section: the Trainer's TensorBoard scalars (loss, learning
rate, accuracy, SI-SNR, ...) as curves, read with TensorBoard's own event reader."""
from __future__ import annotations

import json
import os

import tensorflow as tf
from tensorboard.backend.event_processing import event_accumulator

from components.training import resume
from pipeline import summary
from pipeline.report import plots
from pipeline.report.model import Item, Section


def scalars(log_dir: str) -> list:
    """Rows of {tag, step, value}: every scalar the Trainer wrote (TF2 summaries are tensors),
    sorted by tag and step. A run resumed after a crash writes the steps past its checkpoint
    again, in a second event file: the value written last is the one kept."""
    events = event_accumulator.EventAccumulator(log_dir, size_guidance={event_accumulator.TENSORS: 0})
    events.Reload()
    latest = {}
    for tag in events.Tags()[event_accumulator.TENSORS]:
        for event in events.Tensors(tag):
            key = (tag, int(event.step))
            if key not in latest or event.wall_time >= latest[key][0]:
                latest[key] = (event.wall_time, float(tf.make_ndarray(event.tensor_proto)))
    return [{"tag": tag, "step": step, "value": value} for (tag, step), (_, value) in sorted(latest.items())]


def section(run: summary.RunSummary) -> Section:
    model_run = run.artifacts.get("Trainer", {}).get("model_run", [])
    out = Section("Training")
    if not model_run:
        out.notes.append("The Trainer did not run in this run.")
        return out
    rows = scalars(model_run[0].uri)
    resumed = os.path.join(model_run[0].uri, resume.RESUMED_FILE)
    if tf.io.gfile.exists(resumed):
        with tf.io.gfile.GFile(resumed) as f:
            start = json.load(f)
        out.notes.append(f"Resumed after a crash from {start['checkpoint']} at step {start['step']}; the "
                         f"curves up to that step are the stopped execution's.")
        # <stopped execution's model_run>/checkpoints/ckpt-N: its events hold the steps before the resume.
        stopped = os.path.dirname(os.path.dirname(start["checkpoint"]))
        if stopped.rstrip("/") != model_run[0].uri.rstrip("/"):
            rows = sorted([r for r in scalars(stopped) if r["step"] <= start["step"]] + rows,
                          key=lambda r: (r["tag"], r["step"]))
    if rows:
        out.items.append(Item("training_curves", "Training curves (TensorBoard scalars)", rows, plots.curves(rows),
                              caption=f"from {model_run[0].uri}; eval_* are the Trainer's own eval split passes"))
    else:
        out.notes.append(f"No TensorBoard scalars in {model_run[0].uri}.")
    return out
