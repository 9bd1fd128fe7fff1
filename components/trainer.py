"""Trainer module: a hand-written tf.GradientTape loop in one traced tf.function.

TFX's Trainer calls `run_fn`. The loop reads the Transform output through
`fn_args.data_accessor`, applies SpecAugment to the training stream only, trains
with AdamW (no weight decay on biases and norm layers), linear warmup then linear
decay, clipping by global norm, and dynamic loss scaling under mixed_float16.
It exports a float32 SavedModel whose signatures apply the Transform graph.
"""
from __future__ import annotations

import math
import time
from typing import Callable, Dict, Tuple

import tensorflow as tf
import tensorflow_transform as tft
import tf_keras as keras
from absl import logging
from tfx import v1 as tfx
from tfx_bsl.public import tfxio
from transformers.optimization_tf import WarmUp

from components import features
from components.model import build_logmel_cnn
from components.transform import spec_augment
from pipeline.config import PipelineConfig, TrainerConfig

_NO_DECAY = ["bias", "gamma", "beta", "norm", "LayerNorm", "layer_norm"]


def make_dataset(file_pattern, data_accessor, tf_transform_output: tft.TFTransformOutput,
                 batch_size: int, cfg: TrainerConfig, training: bool) -> tf.data.Dataset:
    """(log_mel, label_id) batches from the Transform output; SpecAugment on training only."""
    ds = data_accessor.tf_dataset_factory(
        file_pattern,
        tfxio.TensorFlowDatasetOptions(batch_size=batch_size, shuffle=False, num_epochs=1),
        tf_transform_output.transformed_metadata.schema)
    ds = ds.map(lambda f: (f[features.LOG_MEL], tf.reshape(f[features.LABEL_ID], [-1])))
    ds = ds.unbatch().cache()
    if training:
        ds = ds.shuffle(cfg.shuffle_buffer, seed=cfg.seed, reshuffle_each_iteration=True)
        if cfg.spec_augment.enabled:
            ds = ds.map(lambda x, y: (spec_augment(x, cfg.spec_augment), y),
                        num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def learning_rate_schedule(cfg: TrainerConfig, total_steps: int) -> WarmUp:
    """Linear warmup over warmup_ratio of the steps, then linear decay to 0 (transformers' WarmUp)."""
    warmup_steps = max(1, int(cfg.warmup_ratio * total_steps))
    decay = keras.optimizers.schedules.PolynomialDecay(
        cfg.learning_rate, max(1, total_steps - warmup_steps), end_learning_rate=0.0, power=1.0)
    return WarmUp(cfg.learning_rate, decay, warmup_steps)


def build_optimizer(cfg: TrainerConfig, total_steps: int) -> keras.optimizers.Optimizer:
    """AdamW on the warmup schedule, with no weight decay on biases and norm layers."""
    optimizer = keras.optimizers.AdamW(learning_rate=learning_rate_schedule(cfg, total_steps),
                                       weight_decay=cfg.weight_decay)
    optimizer.exclude_from_weight_decay(var_names=_NO_DECAY)
    return optimizer


def make_train_step(model: keras.Model, optimizer: keras.optimizers.Optimizer, clip_norm: float,
                    input_spec: tf.TensorSpec) -> Callable[[tf.Tensor, tf.Tensor], Dict[str, tf.Tensor]]:
    """One compiled step with a fixed input signature, so it is traced once per run."""
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    scaled = isinstance(optimizer, keras.mixed_precision.LossScaleOptimizer)

    @tf.function(input_signature=[input_spec, tf.TensorSpec([None], tf.int64)])
    def train_step(x, y):
        variables = model.trainable_variables
        with tf.GradientTape() as tape:
            logits = tf.cast(model(x, training=True), tf.float32)
            loss = loss_fn(y, logits)
            loss_for_grad = optimizer.get_scaled_loss(loss) if scaled else loss
        grads = tape.gradient(loss_for_grad, variables)
        if scaled:
            grads = optimizer.get_unscaled_gradients(grads)
        finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])
        grads, grad_norm = tf.clip_by_global_norm(grads, clip_norm)
        if scaled:  # LossScaleOptimizer skips non-finite steps and lowers the scale itself
            optimizer.apply_gradients(zip(grads, variables))
        else:
            tf.cond(finite, lambda: optimizer.apply_gradients(zip(grads, variables)),
                    lambda: tf.constant(0, tf.int64))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, -1), y), tf.float32))
        return {"loss": loss, "accuracy": accuracy, "grad_norm": grad_norm, "finite": finite}

    return train_step


def evaluate(model: keras.Model, dataset: tf.data.Dataset) -> Tuple[float, float]:
    """(mean loss, accuracy) of `model` on `dataset`."""
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum")

    @tf.function
    def step(x, y):
        logits = tf.cast(model(x, training=False), tf.float32)
        return loss_fn(y, logits), tf.reduce_sum(tf.cast(tf.equal(tf.argmax(logits, -1), y), tf.float32))

    total_loss = total_correct = count = 0.0
    for x, y in dataset:
        loss, correct = step(x, y)
        total_loss += float(loss)
        total_correct += float(correct)
        count += int(tf.shape(y)[0])
    return total_loss / max(count, 1), total_correct / max(count, 1)


def _export(model: keras.Model, tf_transform_output: tft.TFTransformOutput, export_dir: str) -> None:
    """Float32 SavedModel: serving_default (tf.Examples), transform_features (for TFMA), serve_wav."""
    model.tft_layer = tf_transform_output.transform_features_layer()
    labels = tf.constant(tf_transform_output.vocabulary_by_name(features.LABEL_VOCAB))
    raw_spec = tf_transform_output.raw_feature_spec()

    def predict(transformed):
        probabilities = tf.nn.softmax(tf.cast(model(transformed[features.LOG_MEL], training=False), tf.float32))
        return {features.OUT_PROBABILITIES: probabilities,
                features.OUT_LABEL: tf.gather(labels, tf.argmax(probabilities, axis=-1))}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def serve_examples(serialized):
        raw = tf.io.parse_example(serialized, {features.AUDIO: raw_spec[features.AUDIO]})
        return predict(model.tft_layer(raw))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def transform_features(serialized):
        return model.tft_layer(tf.io.parse_example(serialized, raw_spec))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="wav")])
    def serve_wav(wav):
        return predict(model.tft_layer({features.AUDIO: tf.reshape(wav, [-1, 1])}))

    model.save(export_dir, save_format="tf", signatures={
        "serving_default": serve_examples, "transform_features": transform_features,
        "serve_wav": serve_wav})


# TFX Trainer entry point.
def run_fn(fn_args: tfx.components.FnArgs) -> None:
    cfg = PipelineConfig.from_dict(fn_args.custom_config["config"])
    tcfg = cfg.trainer
    tf.random.set_seed(tcfg.seed)
    tf_transform_output = tft.TFTransformOutput(fn_args.transform_output)
    train_ds = make_dataset(fn_args.train_files, fn_args.data_accessor, tf_transform_output,
                            tcfg.batch_size, tcfg, training=True)
    eval_ds = make_dataset(fn_args.eval_files, fn_args.data_accessor, tf_transform_output,
                           tcfg.batch_size, tcfg, training=False)
    num_classes = tf_transform_output.vocabulary_size_by_name(features.LABEL_VOCAB)
    frames, bins = cfg.features.num_frames, cfg.features.num_mel_bins
    model = build_logmel_cnn(frames, bins, num_classes)

    steps_per_epoch = int(train_ds.reduce(0, lambda n, _: n + 1))  # also fills the cache
    total_steps = steps_per_epoch * tcfg.epochs
    optimizer = build_optimizer(tcfg, total_steps)
    optimizer.build(model.trainable_variables)
    train_step = make_train_step(model, optimizer, tcfg.clip_norm,
                                 tf.TensorSpec([None, frames, bins], tf.float32))
    logging.info("Training %s: %d classes, %d steps per epoch, %d epochs",
                 model.name, num_classes, steps_per_epoch, tcfg.epochs)
    step = 0
    for epoch in range(tcfg.epochs):
        start, seen = time.time(), 0
        for x, y in train_ds:
            out = train_step(x, y)
            step += 1
            seen += int(tf.shape(y)[0])
            if step % tcfg.log_every_steps == 0:
                logging.info("step %d/%d loss %.4f acc %.3f grad_norm %.3f", step, total_steps,
                             float(out["loss"]), float(out["accuracy"]), float(out["grad_norm"]))
        eval_loss, eval_acc = evaluate(model, eval_ds)
        logging.info("epoch %d: eval loss %.4f eval accuracy %.4f (%.0f examples/s)",
                     epoch + 1, eval_loss, eval_acc, seen / max(time.time() - start, 1e-9))
    if not math.isfinite(eval_loss):
        raise RuntimeError(f"training diverged: eval loss {eval_loss}")
    _export(model, tf_transform_output, fn_args.serving_model_dir)
