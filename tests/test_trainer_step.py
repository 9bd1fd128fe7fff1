"""The GradientTape training step: it learns, is traced once per run, skips
non-finite steps, keeps weight decay off biases and norms, and warms up."""
import numpy as np
import pytest
import tensorflow as tf

from components import trainer
from components.model import build_logmel_cnn
from pipeline.config import TrainerConfig

FRAMES, BINS, CLASSES = 20, 16, 3


def _toy_data(n=60, seed=0):
    """Each class lights up its own band of mel bins: learnable in a few steps."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, CLASSES, n)
    x = rng.normal(0, 1, (n, FRAMES, BINS)).astype(np.float32)
    for i, label in enumerate(y):
        x[i, :, label * 5:(label + 1) * 5] += 3.0
    return tf.data.Dataset.from_tensor_slices((x, y.astype(np.int64))).batch(16)  # last batch 12


def _setup(total_steps=30, **overrides):
    tf.random.set_seed(0)
    cfg = TrainerConfig(learning_rate=3e-3, **overrides)
    model = build_logmel_cnn(FRAMES, BINS, CLASSES)
    optimizer = trainer.build_optimizer(cfg, total_steps)
    optimizer.build(model.trainable_variables)
    step = trainer.make_train_step(model, optimizer, cfg.clip_norm,
                                   tf.TensorSpec([None, FRAMES, BINS], tf.float32))
    return model, optimizer, step


def test_train_step_learns_and_is_traced_once_over_several_epochs():
    data = _toy_data()
    model, _, step = _setup(total_steps=40)
    first_loss, _ = trainer.evaluate(model, data)
    for _ in range(10):  # 10 epochs of 4 batches, the last one smaller
        for x, y in data:
            step(x, y)
    loss, accuracy = trainer.evaluate(model, data)
    assert step.experimental_get_tracing_count() == 1
    assert loss < 0.5 * first_loss
    assert accuracy >= 0.9


def test_a_step_with_non_finite_gradients_is_skipped():
    model, optimizer, step = _setup()
    x, y = next(iter(_toy_data()))
    step(x, y)
    before = [v.numpy().copy() for v in model.trainable_variables]
    iterations = int(optimizer.iterations)
    out = step(tf.where(tf.equal(x, x[0, 0, 0]), np.nan, x), y)  # one NaN input poisons the grads
    assert not bool(out["finite"])
    assert int(optimizer.iterations) == iterations
    for old, var in zip(before, model.trainable_variables):
        np.testing.assert_array_equal(old, var.numpy())


def test_weight_decay_applies_to_kernels_but_not_biases_or_norm_layers():
    tf.random.set_seed(0)
    cfg = TrainerConfig(learning_rate=0.1, weight_decay=0.5, warmup_ratio=0.0)
    model = build_logmel_cnn(FRAMES, BINS, CLASSES)
    for var in model.trainable_variables:  # make every variable non-zero so decay would show
        var.assign(tf.ones_like(var))
    optimizer = trainer.build_optimizer(cfg, total_steps=100)
    for _ in range(2):  # the schedule's first step has lr 0 (warmup starts at 0)
        optimizer.apply_gradients([(tf.zeros_like(v), v) for v in model.trainable_variables])
    for var in model.trainable_variables:
        decayed = not np.allclose(var.numpy(), 1.0)
        exempt = any(key in var.name for key in ("bias", "gamma", "beta"))
        assert decayed != exempt, var.name


def test_learning_rate_warms_up_linearly_then_decays_to_zero():
    cfg = TrainerConfig(learning_rate=1e-3, warmup_ratio=0.1)
    schedule = trainer.learning_rate_schedule(cfg, total_steps=100)
    lr = [float(schedule(step)) for step in (0, 5, 10, 55, 100)]
    assert lr[0] == pytest.approx(0.0)
    assert lr[1] == pytest.approx(0.5e-3)
    assert lr[2] == pytest.approx(1e-3)
    assert lr[3] == pytest.approx(0.5e-3)
    assert lr[4] == pytest.approx(0.0, abs=1e-9)
