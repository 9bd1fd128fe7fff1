"""The compiled training step: it learns, is traced once per run, applies the
batch's gradient (checked against a hand computation), accumulates gradients,
skips non-finite steps (lowering the loss scale) under mixed_float16, keeps weight
decay off biases and norms, clips, and warms up."""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from components import features
from components.config import ConfigError, FeatureConfig, TrainerConfig, load_config
from components.models.model import build_model
from components.training import loop

FRAMES, BINS, CLASSES = 20, 16, 3
FEATS = FeatureConfig(clip_seconds=0.215, num_mel_bins=BINS)  # 20 frames
assert FEATS.num_frames == FRAMES


def _toy_data(n=60, batch=16, seed=0):
    """Each class lights up its own band of mel bins: learnable in a few steps."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, CLASSES, n)
    x = rng.normal(0, 1, (n, FRAMES, BINS)).astype(np.float32)
    for i, label in enumerate(y):
        x[i, :, label * 5:(label + 1) * 5] += 3.0
    return tf.data.Dataset.from_tensor_slices(({features.LOG_MEL: x}, y.astype(np.int64))).batch(batch)


def _setup(cfg: TrainerConfig, data, total_steps=40):
    tf.random.set_seed(0)
    strategy = tf.distribute.get_strategy()
    model = build_model(cfg, FEATS, CLASSES)
    optimizer = loop.build_optimizer(cfg, total_steps)
    optimizer.build(model.trainable_variables)
    step = loop.make_train_step(model, optimizer, strategy, data.element_spec,
                                         cfg.batch_size, cfg.grad_accum_steps)
    return model, optimizer, step


def _linear_model(seed=0):
    """Dense on the flattened log-mel: no dropout or batch norm, its gradient has a closed form."""
    inputs = keras.Input((FRAMES, BINS), name=features.LOG_MEL)
    model = keras.Model({features.LOG_MEL: inputs}, keras.layers.Dense(CLASSES)(keras.layers.Flatten()(inputs)))
    rng = np.random.default_rng(seed)
    model.set_weights([rng.normal(0, 0.05, w.shape).astype(np.float32) for w in model.get_weights()])
    return model


def _hand_gradient(model, x, y):
    """(mean cross-entropy, [dL/dkernel, dL/dbias]) of the linear model, in numpy (float64)."""
    kernel, bias = (w.astype(np.float64) for w in model.get_weights())
    flat = x.reshape(len(x), -1).astype(np.float64)
    logits = flat @ kernel + bias
    log_p = logits - logits.max(axis=1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(axis=1, keepdims=True))
    p = np.exp(log_p)
    loss = -np.mean(log_p[np.arange(len(y)), y])
    delta = (p - np.eye(CLASSES)[y]) / len(y)
    return loss, [flat.T @ delta, delta.sum(axis=0)]


def _sgd_step(model, data, micro_batch, accum, lr, clip_norm=1e9):
    """The compiled step with plain SGD (in the LossScaleOptimizer, as always)."""
    optimizer = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(lr))
    optimizer.build(model.trainable_variables)
    cfg = TrainerConfig(batch_size=micro_batch, grad_accum_steps=accum, clip_norm=clip_norm)
    return loop.make_train_step(model, optimizer, tf.distribute.get_strategy(), data.element_spec,
                                         micro_batch, accum, cfg)


def _accuracy(model, data):
    right = sum(float(tf.reduce_sum(tf.cast(tf.argmax(model(x)[features.LOGITS], -1) == y, tf.float32)))
                for x, y in data)
    return right / sum(int(tf.shape(y)[0]) for _, y in data)


@pytest.fixture(autouse=True)
def _float32_policy_after():
    yield
    keras.mixed_precision.set_global_policy("float32")


@pytest.mark.parametrize("accum", [1, 2])
def test_train_step_learns_and_is_traced_once_over_several_epochs(accum):
    cfg = TrainerConfig(backbone="logmel_cnn", learning_rate=3e-3, batch_size=16 // accum,
                        grad_accum_steps=accum)
    data = _toy_data()
    model, optimizer, step = _setup(cfg, data)
    losses = []
    for _ in range(10):  # 10 epochs of 4 batches, the last one smaller
        losses.append(sum(float(step(batch)["loss"]) for batch in data))
    assert step.experimental_get_tracing_count() == 1
    assert int(optimizer.iterations) == 40  # one optimizer step per batch of 16, whatever accum is
    assert np.all(np.isfinite(losses))  # minibatch noise, not compared: learning is judged on the data
    assert _accuracy(model, data) >= 0.9


@pytest.mark.parametrize("accum", [1, 4])
def test_one_step_applies_the_full_batch_gradient_whatever_the_accumulation(accum):
    """Plain SGD, no clipping: the update is -lr x the mean gradient over the 32 examples,
    computed by hand; 4 micro-batches of 8 add up to it (not to 4x it, nor to a mean of means)."""
    data = _toy_data(n=32, batch=32)
    x, y = next(iter(data))
    model = _linear_model()
    loss, gradient = _hand_gradient(model, x[features.LOG_MEL].numpy(), y.numpy())
    before = model.get_weights()
    out = _sgd_step(model, data, 32 // accum, accum, lr=0.5)((x, y))
    for old, new, g in zip(before, model.get_weights(), gradient):
        np.testing.assert_allclose(new - old, -0.5 * g, rtol=1e-4, atol=1e-7)
    assert float(out["loss"]) == pytest.approx(loss, rel=1e-5)
    assert float(out["grad_norm"]) == pytest.approx(np.sqrt(sum(np.sum(g ** 2) for g in gradient)), rel=1e-5)
    assert float(out["count"]) == 32


def test_mixed_float16_skips_a_poisoned_step_and_lowers_the_loss_scale():
    keras.mixed_precision.set_global_policy("mixed_float16")
    cfg = TrainerConfig(backbone="logmel_cnn", learning_rate=3e-3, batch_size=16, grad_accum_steps=1)
    data = _toy_data()
    model, optimizer, step = _setup(cfg, data)
    assert model.backbone.layers[2].compute_dtype == "float16"  # really running in float16
    x, y = next(iter(data))
    step((x, y))
    before = [v.numpy().copy() for v in model.trainable_variables]
    scale = float(optimizer.loss_scale)
    poisoned = {features.LOG_MEL: tf.tensor_scatter_nd_update(x[features.LOG_MEL], [[0, 0, 0]], [np.inf])}
    out = step((poisoned, y))
    assert not np.isfinite(float(out["grad_norm"]))
    assert float(optimizer.loss_scale) == scale / 2
    for old, var in zip(before, model.trainable_variables):
        np.testing.assert_array_equal(old, var.numpy())
    step((x, y))  # and training goes on
    assert any(not np.array_equal(o, v.numpy()) for o, v in zip(before, model.trainable_variables))


def test_weight_decay_applies_to_kernels_but_not_biases_or_norm_layers():
    tf.random.set_seed(0)
    cfg = TrainerConfig(backbone="logmel_cnn", learning_rate=0.1, weight_decay=0.5, warmup_ratio=0.0)
    model = build_model(cfg, FEATS, CLASSES)
    for var in model.trainable_variables:  # make every variable non-zero so decay would show
        var.assign(tf.ones_like(var))
    optimizer = loop.build_optimizer(cfg, total_steps=100)
    for _ in range(2):  # the schedule's first step has lr 0 (warmup starts at 0)
        optimizer.apply_gradients([(tf.zeros_like(v), v) for v in model.trainable_variables])
    for var in model.trainable_variables:
        decayed = not np.allclose(var.numpy(), 1.0)
        exempt = any(key in var.name for key in ("bias", "gamma", "beta"))
        assert decayed != exempt, var.name


def test_the_step_clips_the_gradient_to_clip_norm_and_logs_its_norm_before_clipping():
    """A huge gradient, SGD with lr 1: the applied update is the gradient scaled to norm clip_norm."""
    data = _toy_data(n=16, batch=16)
    x, y = next(iter(data))
    x = {features.LOG_MEL: x[features.LOG_MEL] * 1000.0}
    model = _linear_model()
    _, gradient = _hand_gradient(model, x[features.LOG_MEL].numpy(), y.numpy())
    norm = np.sqrt(sum(np.sum(g ** 2) for g in gradient))
    assert norm > 100  # far above clip_norm
    before = model.get_weights()
    out = _sgd_step(model, data, 16, 1, lr=1.0, clip_norm=2.0)((x, y))
    updates = [new - old for old, new in zip(before, model.get_weights())]
    assert np.sqrt(sum(np.sum(u ** 2) for u in updates)) == pytest.approx(2.0, rel=1e-4)
    for u, g in zip(updates, gradient):
        np.testing.assert_allclose(u, -2.0 * g / norm, rtol=1e-3, atol=1e-7)
    assert float(out["grad_norm"]) == pytest.approx(norm, rel=1e-5)


def test_learning_rate_warms_up_linearly_then_decays_to_zero():
    cfg = TrainerConfig(learning_rate=1e-3, warmup_ratio=0.1)
    schedule = loop.learning_rate_schedule(cfg, total_steps=100)
    lr = [float(schedule(step)) for step in (0, 5, 10, 55, 100)]
    assert lr[0] == pytest.approx(0.0)
    assert lr[1] == pytest.approx(0.5e-3)
    assert lr[2] == pytest.approx(1e-3)
    assert lr[3] == pytest.approx(0.5e-3)
    assert lr[4] == pytest.approx(0.0, abs=1e-9)


def test_auto_precision_is_float32_on_a_cpu_only_machine():
    assert not tf.config.list_physical_devices("GPU")
    assert loop.resolve_precision("auto") == "float32"
    assert loop.resolve_precision("mixed_bfloat16") == "mixed_bfloat16"
    with pytest.raises(ConfigError, match="trainer.precision: got 'fp16'"):  # the setting's type says so
        load_config(None, ["trainer.precision=fp16"])
