"""The compiled training step: it learns, is traced once per run, accumulates
gradients, skips non-finite steps (lowering the loss scale) under mixed_float16,
keeps weight decay off biases and norms, clips, and warms up."""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from components import features, training_loop
from components.model import build_model
from components.config import FeatureConfig, TrainerConfig

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
    optimizer = training_loop.build_optimizer(cfg, total_steps)
    optimizer.build(model.trainable_variables)
    step = training_loop.make_train_step(model, optimizer, strategy, data.element_spec,
                                         cfg.batch_size, cfg.grad_accum_steps)
    return model, optimizer, step


def _accuracy(model, data):
    right = sum(float(tf.reduce_sum(tf.cast(tf.argmax(model(x)[features.LOGITS], -1) == y, tf.float32))) for x, y in data)
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
    assert losses[-1] < 0.5 * losses[0]
    assert _accuracy(model, data) >= 0.9


def test_gradient_accumulation_matches_one_big_batch():
    data = _toy_data(n=32, batch=32)
    batch = next(iter(data))
    trajectories, initial = [], None
    for accum, micro in ((1, 32), (4, 8)):
        inputs = keras.Input((FRAMES, BINS), name=features.LOG_MEL)
        model = keras.Model({features.LOG_MEL: inputs}, keras.layers.Dense(CLASSES)(keras.layers.Flatten()(inputs)))
        initial = initial or model.get_weights()
        model.set_weights(initial)  # both runs start from the same weights
        cfg = TrainerConfig(learning_rate=1e-3, batch_size=micro, grad_accum_steps=accum)
        optimizer = training_loop.build_optimizer(cfg, total_steps=10)
        step = training_loop.make_train_step(model, optimizer, tf.distribute.get_strategy(),
                                             data.element_spec, micro, accum)
        for _ in range(5):  # Adam's later steps depend on gradient magnitudes, not just signs
            step(batch)
        trajectories.append([v.numpy() for v in model.trainable_variables])
    for big, accumulated in zip(*trajectories):
        np.testing.assert_allclose(big, accumulated, rtol=1e-4, atol=1e-6)


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
    optimizer = training_loop.build_optimizer(cfg, total_steps=100)
    for _ in range(2):  # the schedule's first step has lr 0 (warmup starts at 0)
        optimizer.apply_gradients([(tf.zeros_like(v), v) for v in model.trainable_variables])
    for var in model.trainable_variables:
        decayed = not np.allclose(var.numpy(), 1.0)
        exempt = any(key in var.name for key in ("bias", "gamma", "beta"))
        assert decayed != exempt, var.name


def test_gradients_are_clipped_by_global_norm():
    cfg = TrainerConfig(backbone="logmel_cnn", learning_rate=1.0, clip_norm=1.0, weight_decay=0.0)
    optimizer = training_loop.build_optimizer(cfg, total_steps=10).inner_optimizer
    clipped = optimizer._clip_gradients([tf.constant([30.0, 40.0])])
    np.testing.assert_allclose(clipped[0].numpy(), [0.6, 0.8], rtol=1e-6)


def test_learning_rate_warms_up_linearly_then_decays_to_zero():
    cfg = TrainerConfig(learning_rate=1e-3, warmup_ratio=0.1)
    schedule = training_loop.learning_rate_schedule(cfg, total_steps=100)
    lr = [float(schedule(step)) for step in (0, 5, 10, 55, 100)]
    assert lr[0] == pytest.approx(0.0)
    assert lr[1] == pytest.approx(0.5e-3)
    assert lr[2] == pytest.approx(1e-3)
    assert lr[3] == pytest.approx(0.5e-3)
    assert lr[4] == pytest.approx(0.0, abs=1e-9)


def test_auto_precision_is_float32_on_a_cpu_only_machine():
    assert not tf.config.list_physical_devices("GPU")
    assert training_loop.resolve_precision("auto") == "float32"
    assert training_loop.resolve_precision("mixed_bfloat16") == "mixed_bfloat16"
    with pytest.raises(ValueError, match="trainer.precision 'fp16'"):
        training_loop.resolve_precision("fp16")
