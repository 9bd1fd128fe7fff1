"""The hand-written training loop's parts: precision, strategy, optimizer, and the
one compiled step.

The step is one `tf.function` with a fixed `input_signature`, so it is traced
once per run. It runs `grad_accum_steps` micro-batches inside itself (a
`tf.while_loop`), then makes one optimizer step: the unscaled gradients are
summed across replicas (the step's all-reduce), their global norm is logged as
`grad_norm` and they are clipped to `clip_norm` by it, then applied. The optimizer
is always a dynamic `LossScaleOptimizer` around AdamW: it skips (and lowers the
scale on) any step whose gradients are not finite. In float32 the scaling is
numerically a no-op; the finite-check and skip remain.
"""
from __future__ import annotations

from typing import Callable, Dict

import tensorflow as tf
import tf_keras as keras
from transformers.optimization_tf import WarmUp

from components import features
from components.config import TrainerConfig
from components.models.denoiser import compressed_spectral_loss, multi_resolution_stft_loss, si_snr, snr
from components.training import context

_NO_DECAY = ["bias", "gamma", "beta", "norm", "LayerNorm", "layer_norm", "weight_g"]


def resolve_precision(name: str) -> str:
    """`auto`: mixed_float16 when a GPU is visible, float32 otherwise (float16 is slow on CPUs)."""
    if name == "auto":
        return "mixed_float16" if tf.config.list_physical_devices("GPU") else "float32"
    return name


def make_strategy() -> tf.distribute.Strategy:
    """MirroredStrategy over every GPU when there are several, else the default strategy."""
    if len(tf.config.list_logical_devices("GPU")) > 1:
        return tf.distribute.MirroredStrategy()
    return tf.distribute.get_strategy()


def learning_rate_schedule(cfg: TrainerConfig, total_steps: int) -> WarmUp:
    """Linear warmup over warmup_ratio of the steps, then linear decay to 0 (transformers' WarmUp)."""
    warmup_steps = max(1, int(cfg.warmup_ratio * total_steps))
    decay = keras.optimizers.schedules.PolynomialDecay(
        cfg.learning_rate, max(1, total_steps - warmup_steps), end_learning_rate=0.0, power=1.0)
    return WarmUp(cfg.learning_rate, decay, warmup_steps)


def build_optimizer(cfg: TrainerConfig, total_steps: int) -> keras.mixed_precision.LossScaleOptimizer:
    """AdamW (no decay on biases and norms) in a dynamic LossScaleOptimizer. It does not
    clip: the training step clips the all-reduced gradients (`make_train_step`)."""
    adamw = keras.optimizers.AdamW(learning_rate=learning_rate_schedule(cfg, total_steps),
                                   weight_decay=cfg.weight_decay)
    adamw.exclude_from_weight_decay(var_names=_NO_DECAY)
    return keras.mixed_precision.LossScaleOptimizer(adamw, dynamic=True)


# The loss's sums for logging: SI-SNR over the clips with a reference, and over the multi-second sequences.
STAT_KEYS = ("si_snr_sum", "with_clean", "context_si_snr_sum", "context_count")


def _targets(y):
    """Targets as a dict: plain labels become {LABEL_ID: labels}."""
    return y if isinstance(y, dict) else {features.LABEL_ID: y}


def make_loss(cfg: TrainerConfig):
    """The objective: (model outputs, inputs, targets, global example count, global count of
    examples with a clean reference) -> (loss, logits, {STAT_KEYS: summed SI-SNR of the enhanced
    audio, examples with a clean reference, and the same over the multi-second sequences}).

    Outputs are a model's logits or its dict with LOGITS (and OUT_ENHANCED); targets
    are labels or a dict with LABEL_ID (and CLEAN_WAVEFORM, HAS_CLEAN). The loss is
    mean cross-entropy over the global batch + weight x mean negative SI-SNR over the
    global batch's examples with a reference (+ weight x context.weight x the mean negative SI-SNR
    over the global batch's multi-second sequences, when the outputs hold them): each term is a
    sum over the replica's (micro-)batch divided by its global count, so replicas and
    micro-batches add up."""
    cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    denoise_weight = {"classify": 0.0, "denoise": 1.0, "joint": cfg.denoise_weight}[cfg.objective]

    def denoise_term(reference, enhanced, valid, weights):
        """(summed -SI-SNR, -SNR or hybrid loss [+ STFT loss] over the weighted examples, summed SI-SNR)."""
        si_snr_sum = tf.reduce_sum(si_snr(reference, enhanced, valid) * weights)
        if cfg.denoise_loss == "si_snr":
            term = -si_snr_sum
        elif cfg.denoise_loss == "hybrid":  # hybrid_loss, with the SI-SNR already summed above
            term = tf.reduce_sum(compressed_spectral_loss(reference, enhanced, valid) * weights) - si_snr_sum / 10.0
        else:
            term = -tf.reduce_sum(snr(reference, enhanced, valid) * weights)
        if cfg.stft_loss_weight:
            term += cfg.stft_loss_weight * tf.reduce_sum(
                multi_resolution_stft_loss(reference, enhanced, valid) * weights)
        return term, si_snr_sum

    def loss_fn(outputs, x, y, global_count, global_clean_count):
        outputs = outputs if isinstance(outputs, dict) else {features.LOGITS: outputs}
        y = _targets(y)
        logits = tf.cast(outputs[features.LOGITS], tf.float32)  # losses in float32
        loss = tf.constant(0.0)
        if cfg.objective != "denoise":
            loss += tf.reduce_sum(cross_entropy(y[features.LABEL_ID], logits)) / global_count
        stats = {k: tf.constant(0.0) for k in STAT_KEYS}
        if features.OUT_ENHANCED in outputs and features.HAS_CLEAN in y:
            enhanced = outputs[features.OUT_ENHANCED]
            valid = tf.sequence_mask(x[features.NUM_SAMPLES], tf.shape(enhanced)[1])
            has_clean = tf.cast(y[features.HAS_CLEAN], tf.float32)
            term, stats["si_snr_sum"] = denoise_term(y[features.CLEAN_WAVEFORM], enhanced, valid, has_clean)
            stats["with_clean"] = tf.reduce_sum(has_clean)
            if denoise_weight:
                loss += denoise_weight * term / tf.maximum(global_clean_count, 1.0)
        if features.OUT_CONTEXT_ENHANCED in outputs:  # the multi-second sequences (components/training/context.py)
            clips = cfg.context.clips
            enhanced = tf.cast(outputs[features.OUT_CONTEXT_ENHANCED], tf.float32)
            # A sequence counts where any of its clips has a reference (a clip without one is silence in it).
            weights = tf.reduce_max(tf.reshape(tf.cast(y[features.HAS_CLEAN], tf.float32), [-1, clips]), axis=-1)
            term, stats["context_si_snr_sum"] = denoise_term(
                context.join(y[features.CONTEXT_CLEAN], clips), enhanced, tf.ones_like(enhanced), weights)
            stats["context_count"] = tf.reduce_sum(weights)
            # (over the global batch's sequences, as the clips' term is over its clips)
            loss += denoise_weight * cfg.context.weight * term / (global_count / clips)
        return loss, logits, stats

    return loss_fn


def _all_reduce_sum(grads):
    """Sums the gradients over the replicas (None, a variable without a gradient, stays None)."""
    present = [g for g in grads if g is not None]
    summed = iter(tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, present)
                  if present else [])
    return [None if g is None else next(summed) for g in grads]


def make_train_step(model: keras.Model, optimizer: keras.mixed_precision.LossScaleOptimizer,
                    strategy: tf.distribute.Strategy, element_spec, micro_batch: int,
                    grad_accum_steps: int, cfg: TrainerConfig | None = None) -> Callable[..., Dict[str, tf.Tensor]]:
    """The compiled step: (features dict, targets) of up to micro_batch * grad_accum_steps
    examples per replica -> summed loss/accuracy/SI-SNR statistics for logging, and
    `grad_norm`, the global norm of the gradient of the global batch (all-reduced,
    before clipping). `cfg` picks the objective and `clip_norm` (default: TrainerConfig's)."""
    cfg = cfg or TrainerConfig()
    loss_fn = make_loss(cfg)

    def micro_step(x, y, global_count, global_clean_count):
        variables = model.trainable_variables
        with tf.GradientTape() as tape:
            loss, logits, stats = loss_fn(model(x, training=True), x, y, global_count, global_clean_count)
            scaled = optimizer.get_scaled_loss(loss)
        grads = optimizer.get_unscaled_gradients(tape.gradient(scaled, variables))
        correct = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(logits, -1), y[features.LABEL_ID]), tf.float32))
        return loss, grads, {"correct": correct, **stats}

    def replica_step(x, y):
        y = _targets(y)
        count = tf.shape(y[features.LABEL_ID])[0]
        global_count = tf.cast(count * strategy.num_replicas_in_sync, tf.float32)
        with_clean = (tf.reduce_sum(tf.cast(y[features.HAS_CLEAN], tf.float32))
                      if features.HAS_CLEAN in y else tf.constant(0.0))
        global_clean_count = tf.distribute.get_replica_context().all_reduce(
            tf.distribute.ReduceOp.SUM, with_clean)
        if grad_accum_steps == 1:
            loss, grads, stats = micro_step(x, y, global_count, global_clean_count)
        else:
            loss = tf.constant(0.0)
            stats = {k: tf.constant(0.0) for k in ("correct",) + STAT_KEYS}
            grads = [tf.zeros_like(v) for v in model.trainable_variables]
            for start in tf.range(0, count, micro_batch):
                part = tf.nest.map_structure(lambda t: t[start:start + micro_batch], (x, y))
                part_loss, part_grads, part_stats = micro_step(*part, global_count, global_clean_count)
                loss += part_loss
                stats = {k: v + part_stats[k] for k, v in stats.items()}
                grads = [g if p is None else g + p for g, p in zip(grads, part_grads)]
        grads = _all_reduce_sum(grads)  # the global batch's gradient, the same on every replica
        # A non-finite norm makes every gradient NaN: the optimizer skips the step.
        grads, grad_norm = tf.clip_by_global_norm(grads, cfg.clip_norm)
        # Already summed: the optimizer must not all-reduce them again.
        optimizer.apply_gradients(zip(grads, model.trainable_variables), skip_gradients_aggregation=True)
        return {"loss": loss, "count": tf.cast(count, tf.float32), "grad_norm": grad_norm, **stats}

    @tf.function(input_signature=[element_spec])
    def train_step(batch):
        per_replica = strategy.run(replica_step, args=batch)
        # Sums over replicas, but grad_norm: every replica holds the same one.
        return {k: strategy.reduce(tf.distribute.ReduceOp.MEAN if k == "grad_norm" else tf.distribute.ReduceOp.SUM,
                                   v, axis=None) for k, v in per_replica.items()}

    return train_step
