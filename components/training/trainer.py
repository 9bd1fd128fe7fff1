"""Trainer module: TFX's Trainer calls `run_fn`, which runs the hand-written loop.

Reads the ExampleGen's examples through `input_pipeline` (the Transform graph applied
in a parallel tf.data map; cache by size, seeded shuffle and SpecAugment per epoch,
prefetch), trains with the compiled step of
`loop`, checkpoints every N steps into `model_run_dir` (a retry resumes
from the last checkpoint, a rerun after a crash from the crashed execution's: see
`resume`; the data stream continues where the interrupted run's stood),
writes TensorBoard scalars there, and exports a float32 SavedModel (see `export`).
"""
from __future__ import annotations

import json
import math
import os
import time

import tensorflow as tf
import tensorflow_transform as tft
import tf_keras as keras
from absl import logging
from tfx import v1 as tfx

from components import features, progress_lines
from components.config import PipelineConfig
from components.models import denoiser_weights
from components.models.denoiser import si_snr
from components.models.model import build_model, input_keys
from components.serving.export import export_saved_model
from components.training import input_pipeline, memory, resume
from components.training import loop as training_loop


def _make_evaluate(model: keras.Model, dataset: tf.data.Dataset, examples: int, batch_size: int):
    """A function of no arguments -> {eval_accuracy, eval_examples[, eval_si_snr_improvement_db]}
    over one pass of `dataset` (`examples` in batches of `batch_size`: one epoch), its compiled
    step traced once.
    One iterator over the dataset repeated serves every call: a new iterator each epoch would
    set the input pipeline up again (its functions instantiated and optimized anew).
    The SI-SNR figures use the training loss's tf metric, over examples with a clean
    reference; the Evaluator's are authoritative."""
    iterator, batches = iter(dataset.repeat()), math.ceil(examples / batch_size)

    @tf.function
    def sums(x, y):
        outputs = model(x, training=False)
        labels = y[features.LABEL_ID]
        out = {"correct": tf.reduce_sum(tf.cast(tf.equal(tf.argmax(outputs[features.LOGITS], -1), labels),
                                                tf.float32)),
               "count": tf.cast(tf.shape(labels)[0], tf.float32)}
        if features.OUT_ENHANCED in outputs:
            valid = tf.sequence_mask(x[features.NUM_SAMPLES], tf.shape(x[features.WAVEFORM])[1])
            has_clean = tf.cast(y[features.HAS_CLEAN], tf.float32)
            gain = (si_snr(y[features.CLEAN_WAVEFORM], outputs[features.OUT_ENHANCED], valid)
                    - si_snr(y[features.CLEAN_WAVEFORM], x[features.WAVEFORM], valid))
            out.update(si_snri=tf.reduce_sum(gain * has_clean), with_clean=tf.reduce_sum(has_clean))
        return out

    def evaluate() -> dict:
        totals: dict = {}
        for _ in range(batches):
            x, y = next(iterator)
            for key, value in sums(x, y).items():
                totals[key] = totals.get(key, 0.0) + float(value)
        result = {"eval_accuracy": totals["correct"] / max(totals["count"], 1.0),
                  "eval_examples": totals["count"]}
        if totals.get("with_clean"):
            result["eval_si_snr_improvement_db"] = totals["si_snri"] / totals["with_clean"]
        return result

    return evaluate


def _number(value, kind=float):
    """A Python number from a tensor or a (possibly mirrored) variable."""
    return kind(tf.convert_to_tensor(value).numpy())


def _float32_copy(trained: keras.Model, build) -> keras.Model:
    """Rebuilds the model under the float32 policy and copies the trained weights."""
    keras.mixed_precision.set_global_policy("float32")
    model = build()
    model.set_weights(trained.get_weights())
    return model


# TFX Trainer entry point.
def run_fn(fn_args: tfx.components.FnArgs) -> None:
    cfg = PipelineConfig.from_dict(fn_args.custom_config["config"])
    tcfg = cfg.trainer
    tf.random.set_seed(tcfg.seed)
    precision = training_loop.resolve_precision(tcfg.precision)
    strategy = training_loop.make_strategy()
    global_batch = tcfg.batch_size * tcfg.grad_accum_steps * strategy.num_replicas_in_sync
    tf_transform_output = tft.TFTransformOutput(fn_args.transform_output)
    train_size = input_pipeline.require_examples(fn_args.train_files, "training")
    eval_size = input_pipeline.require_examples(fn_args.eval_files, "evaluation")
    feature_bytes = input_pipeline.feature_bytes(tf_transform_output, tcfg)
    cache = input_pipeline.cache_choice(tcfg, feature_bytes, train_size, eval_size)
    cache_dir = os.path.join(fn_args.model_run_dir, resume.CACHE_DIR)  # trainer.cache: disk
    train_examples = train_size.examples
    steps_per_epoch = max(1, math.ceil(train_examples / global_batch))
    total_steps = steps_per_epoch * tcfg.epochs
    if tcfg.max_steps:
        total_steps = min(total_steps, tcfg.max_steps)
    num_classes = tf_transform_output.vocabulary_size_by_name(features.LABEL_VOCAB)

    def build():
        return build_model(tcfg, cfg.features, num_classes)

    keras.mixed_precision.set_global_policy(precision)
    try:
        with strategy.scope():
            model = build()
            optimizer = training_loop.build_optimizer(tcfg, total_steps)
            optimizer.build(model.trainable_variables)
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
        manager = tf.train.CheckpointManager(checkpoint, resume.checkpoint_dir(fn_args.model_run_dir),
                                             max_to_keep=2)
        run_key = resume.key(fn_args)
        # This execution's own checkpoints (a retry), else a crashed execution's of the same training.
        restore_from = manager.latest_checkpoint or resume.crashed_sibling(fn_args.model_run_dir, run_key)
        resume.mark(fn_args.model_run_dir, resume.KEY_FILE, run_key)
        if cache == "disk" and restore_from:  # the crashed run's featurized examples (before this run's start)
            resume.adopt_cache(restore_from, cache_dir)
        eval_ds = input_pipeline.make_dataset(fn_args.eval_files, tf_transform_output, tcfg.batch_size, tcfg,
                                          training=False, cache=cache, cache_path=os.path.join(cache_dir, "eval"))
        if restore_from:
            checkpoint.restore(restore_from).assert_existing_objects_matched()
            step = _number(optimizer.iterations, int)
            logging.info("Resumed from %s at step %d of %d", restore_from, step, total_steps)
            resume.mark(fn_args.model_run_dir, resume.RESUMED_FILE,
                        json.dumps({"checkpoint": restore_from, "step": step}))
        elif tcfg.denoiser.warm_start:  # a fresh run from the pretrained denoiser (a resumed one has its own)
            denoiser_weights.load(model.denoiser, tcfg.denoiser.warm_start)
        # The data stream starts where the restored step left it (step 0 on a fresh run).
        train_ds = input_pipeline.make_dataset(fn_args.train_files, tf_transform_output, global_batch, tcfg,
                                           training=True, start_step=_number(optimizer.iterations, int),
                                           split=train_size, cache=cache,
                                           cache_path=os.path.join(cache_dir, "train"))
        dist_ds = strategy.experimental_distribute_dataset(train_ds)
        train_step = training_loop.make_train_step(model, optimizer, strategy, dist_ds.element_spec,
                                                   tcfg.batch_size, tcfg.grad_accum_steps, tcfg)
        evaluate = _make_evaluate(model, eval_ds, eval_size.examples, tcfg.batch_size)
        _train(model, optimizer, train_step, dist_ds, evaluate, manager, fn_args.model_run_dir,
               tcfg, steps_per_epoch, total_steps, f"{precision}, {strategy.num_replicas_in_sync} replica(s)")
        if precision != "float32":
            model = _float32_copy(model, build)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    export_saved_model(model, tf_transform_output, input_keys(tcfg), cfg.features.num_samples,
                       fn_args.serving_model_dir, tcfg.denoiser.attenuation_limit_db)
    if model.denoiser is not None:  # what trainer.denoiser.warm_start takes
        denoiser_weights.save(model.denoiser, fn_args.serving_model_dir)
    resume.mark(fn_args.model_run_dir, resume.DONE_FILE, "")
    if tf.io.gfile.isdir(cache_dir):  # a finished run keeps no copy of its features
        tf.io.gfile.rmtree(cache_dir)
    # The Evaluator and the Pusher run next in this process (LocalDagRunner): free the input
    # pipeline's buffers for them.
    del train_ds, dist_ds, eval_ds, evaluate, train_step, model, optimizer, checkpoint, manager
    memory.release_freed_memory("Trainer done")


def _train(model, optimizer, train_step, dist_ds, evaluate, manager, log_dir, tcfg, steps_per_epoch,
           total_steps, setup: str) -> None:
    writer = tf.summary.create_file_writer(log_dir)
    logging.info("Training %s (%s): %d steps per epoch, %d epochs, %d trainable parameters",
                 model.name, setup, steps_per_epoch, tcfg.epochs,
                 sum(int(tf.size(v)) for v in model.trainable_variables))
    step = _number(optimizer.iterations, int)
    batches = iter(dist_ds)  # one iterator for the whole run: its batches cross epoch boundaries
    train_step.get_concrete_function()  # traced while the (warm-started) input pipeline fills
    while step < total_steps:
        epoch = step // steps_per_epoch
        start, seen = time.time(), 0.0
        interval_start, waited = time.perf_counter(), 0.0  # time blocked on the input pipeline
        # fewer after a resume, or in the last epoch with trainer.max_steps
        for _ in range(min(steps_per_epoch - step % steps_per_epoch, total_steps - step)):
            before = time.perf_counter()
            batch = next(batches)
            waited += time.perf_counter() - before
            out = train_step(batch)
            step = _number(optimizer.iterations, int)
            seen += float(out["count"])
            if step % tcfg.log_every_steps == 0 or step == total_steps:
                rate = seen / max(time.time() - start, 1e-9)
                input_wait = waited / max(time.perf_counter() - interval_start, 1e-9)
                interval_start, waited = time.perf_counter(), 0.0
                lr = _number(optimizer.inner_optimizer.learning_rate)
                scalars = {"loss": float(out["loss"]), "learning_rate": lr,
                           "loss_scale": _number(optimizer.loss_scale), "grad_norm": float(out["grad_norm"]),
                           "examples_per_second": rate, "input_wait_fraction": input_wait,
                           "train_accuracy": float(out["correct"]) / max(float(out["count"]), 1.0)}
                if float(out["with_clean"]):
                    scalars["train_si_snr_db"] = float(out["si_snr_sum"]) / float(out["with_clean"])
                if float(out["context_count"]):  # the denoiser's multi-second sequences (trainer.context)
                    scalars["train_context_si_snr_db"] = float(out["context_si_snr_sum"]) / float(out["context_count"])
                with writer.as_default(step=step):
                    for name, value in scalars.items():
                        tf.summary.scalar(name, value)
                logging.info("step %d/%d epoch %d " + " ".join(f"{k} %.4g" for k in scalars), step,
                             total_steps, epoch + 1, *scalars.values())
                progress_lines.log("Trainer step %d/%d (epoch %d/%d): %.1f examples/s, loss %.4g", step,
                                   total_steps, epoch + 1, tcfg.epochs, rate, scalars["loss"])
            if step % tcfg.checkpoint_every_steps == 0:
                manager.save(checkpoint_number=step)
        results = evaluate()
        with writer.as_default(step=step):
            for name, value in results.items():
                tf.summary.scalar(name, value)
        logging.info("epoch %d: " + " ".join(f"{k} %.4f" for k in results), epoch + 1, *results.values())
    manager.save(checkpoint_number=step)
    writer.flush()
