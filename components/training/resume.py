"""Where a Trainer execution resumes from.

A retried execution (Kubeflow retries a failed step as the same execution) finds its own
checkpoints in its `model_run_dir`. A local rerun after a crash is a new execution with a
new `model_run_dir` beside the crashed one's: it resumes from the crashed execution's last
checkpoint when that execution trained on the same data with the same settings (the same
key: the transformed examples, the Transform graph, the trainer and feature settings) and did not finish.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Optional

import tensorflow as tf

KEY_FILE = "resume_key.txt"  # written when an execution starts training
DONE_FILE = "training_done"  # written when it finished: nothing to resume from there
RESUMED_FILE = "resumed_from.json"  # what this execution resumed from, for people and tests
CACHE_DIR = "feature-cache"  # trainer.cache: disk (input_pipeline.prepare_disk_cache)
CHECKPOINT_DIR = "checkpoints"


def checkpoint_dir(model_run_dir: str) -> str:
    """Where an execution's checkpoints go: <model_run_dir>/checkpoints."""
    return os.path.join(model_run_dir, CHECKPOINT_DIR)


def run_dir_of(checkpoint: str) -> str:
    """The model_run_dir of the execution that wrote `checkpoint` (<model_run_dir>/checkpoints/ckpt-N)."""
    return os.path.dirname(os.path.dirname(checkpoint.rstrip("/")))


def key(fn_args) -> str:
    config = fn_args.custom_config["config"]  # the training's settings: the rest is in the data's URIs
    inputs = {"train_files": list(fn_args.train_files), "eval_files": list(fn_args.eval_files),
              "transform_output": fn_args.transform_output,
              "trainer": config["trainer"], "features": config["features"]}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def _read(path: str) -> str:
    with tf.io.gfile.GFile(path) as f:
        return f.read().strip()


def crashed_sibling(model_run_dir: str, run_key: str) -> Optional[str]:
    """The latest checkpoint of an unfinished execution beside this one with the same key."""
    parent = os.path.dirname(model_run_dir.rstrip("/"))
    best, best_step = None, -1
    for name in tf.io.gfile.listdir(parent) if tf.io.gfile.isdir(parent) else []:
        sibling = os.path.join(parent, name.rstrip("/"))
        if sibling.rstrip("/") == model_run_dir.rstrip("/"):
            continue
        key_path = os.path.join(sibling, KEY_FILE)
        if (not tf.io.gfile.exists(key_path) or _read(key_path) != run_key
                or tf.io.gfile.exists(os.path.join(sibling, DONE_FILE))):
            continue
        latest = tf.train.latest_checkpoint(checkpoint_dir(sibling))
        step = int(latest.rsplit("-", 1)[1]) if latest else -1
        if step > best_step:
            best, best_step = latest, step
    return best


def mark(model_run_dir: str, name: str, content: str) -> None:
    tf.io.gfile.makedirs(model_run_dir)
    with tf.io.gfile.GFile(os.path.join(model_run_dir, name), "w") as f:
        f.write(content)


def adopt_cache(restore_from: str, cache_dir: str) -> None:
    """Moves the disk cache of the execution `restore_from` (a checkpoint of it) to `cache_dir`, this
    execution's, when that is another execution's and this one has none yet: a resumed run reads the
    featurized examples its crashed predecessor wrote (a part it left unfinished is written anew)."""
    source = os.path.join(run_dir_of(restore_from), CACHE_DIR)
    if source.rstrip("/") == cache_dir.rstrip("/") or not tf.io.gfile.isdir(source) or tf.io.gfile.exists(cache_dir):
        return
    tf.io.gfile.makedirs(os.path.dirname(cache_dir.rstrip("/")))
    tf.io.gfile.rename(source, cache_dir)
