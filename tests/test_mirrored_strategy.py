"""The compiled step under MirroredStrategy with two replicas. No GPUs here, so the
replicas are two logical CPU devices (set up in a fresh process, before TF
initializes its devices); the code path (strategy.run, the step's all-reduce of the
gradients, cross-replica reduce, the LossScaleOptimizer's finite check) is the one
several GPUs take. Two replicas are compared with one on the same global batches."""
import json
import subprocess
import sys

import numpy as np
import pytest

SCRIPT = r"""
import json, os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import tf_keras as keras
from components import features
from components.training import loop
from components.models.model import build_model
from components.config import FeatureConfig, TrainerConfig

GLOBAL_BATCH = 16
rng = np.random.default_rng(0)
y = rng.integers(0, 3, 64)
x = rng.normal(0, 1, (64, 20, 16)).astype(np.float32)
for i, label in enumerate(y):
    x[i, :, label * 5:(label + 1) * 5] += 3.0
ds = tf.data.Dataset.from_tensor_slices(({features.LOG_MEL: x}, y.astype(np.int64))).batch(GLOBAL_BATCH)


def linear_model():
    # No dropout or batch norm: one replica and two compute the same gradient of the global batch.
    inputs = keras.Input((20, 16), name=features.LOG_MEL)
    return keras.Model({features.LOG_MEL: inputs}, keras.layers.Dense(3)(keras.layers.Flatten()(inputs)))


def run(strategy, optimizer_name, build, initial=None):
    # One epoch (4 global batches of 16): per step loss and grad_norm, the weights after the first step and at the end.
    replicas = strategy.num_replicas_in_sync
    cfg = TrainerConfig(backbone="logmel_cnn", learning_rate=3e-3, batch_size=GLOBAL_BATCH // replicas,
                        grad_accum_steps=1, clip_norm=1e9 if optimizer_name == "sgd" else 1.0)
    with strategy.scope():
        model = build()
        if initial is not None:
            model.set_weights(initial)
        optimizer = (keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1)) if optimizer_name == "sgd"
                     else loop.build_optimizer(cfg, total_steps=8))
        optimizer.build(model.trainable_variables)
    start = [w.tolist() for w in model.get_weights()]
    dist = strategy.experimental_distribute_dataset(ds)
    step = loop.make_train_step(model, optimizer, strategy, dist.element_spec, cfg.batch_size, 1, cfg)
    outs, first = [], None
    for batch in dist:
        outs.append({k: float(v) for k, v in step(batch).items()})
        first = first or [w.tolist() for w in model.get_weights()]
    return {"replicas": replicas, "count": outs[-1]["count"], "loss": [o["loss"] for o in outs],
            "grad_norm": [o["grad_norm"] for o in outs], "start": start, "first": first,
            "end": [w.tolist() for w in model.get_weights()], "traces": step.experimental_get_tracing_count(),
            "iterations": int(tf.convert_to_tensor(optimizer.iterations).numpy())}


two = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
one = tf.distribute.get_strategy()
result = {}
for name in ("sgd", "adamw"):
    tf.random.set_seed(0)
    result[name] = {"two": run(two, name, linear_model)}
    initial = [np.array(w, np.float32) for w in result[name]["two"]["start"]]
    result[name]["one"] = run(one, name, linear_model, initial)
tf.random.set_seed(0)  # the production model (batch norm, dropout) under two replicas
result["logmel_cnn"] = run(two, "adamw", lambda: build_model(
    TrainerConfig(backbone="logmel_cnn"), FeatureConfig(clip_seconds=0.215, num_mel_bins=16), 3))
print("RESULT" + json.dumps(result))
"""


def _close(a, b, rtol=1e-5, atol=1e-6):
    for x, y in zip(a, b):
        np.testing.assert_allclose(np.array(x), np.array(y), rtol=rtol, atol=atol)


@pytest.fixture(scope="module")
def runs():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.split("RESULT", 1)[1])


def test_two_replicas_share_the_global_batch_and_step_once_per_batch(runs):
    out = runs["logmel_cnn"]
    assert out["replicas"] == 2
    assert out["count"] == 16  # the last global batch: 8 per replica, summed over both
    assert out["iterations"] == 4  # 4 global batches of 16, one optimizer step each
    assert out["traces"] == 1
    assert all(np.isfinite(out["loss"])) and all(np.isfinite(out["grad_norm"]))
    assert out["end"] != out["start"]  # the weights moved (the warmup's first step has lr 0)


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_two_replicas_step_as_one_replica_on_the_same_global_batch(runs, optimizer):
    """Same weights, same global batches: the same loss, the same grad_norm (the norm of
    the all-reduced gradient, not a mean of per-replica norms), the same weights after
    the first step (plain SGD: the update is the gradient itself) and after an epoch."""
    two, one = runs[optimizer]["two"], runs[optimizer]["one"]
    assert (two["replicas"], one["replicas"]) == (2, 1)
    assert two["start"] == one["start"]
    # Float32 sums in another order (per replica, then across them): losses near 5e-4 have
    # differed by 1.5e-5 relative (a fresh-clone CI failure at rtol 1e-5). The bugs this
    # guards against (a mean of per-replica norms, a double all-reduce) are factors of 2.
    np.testing.assert_allclose(two["loss"], one["loss"], rtol=1e-4)
    np.testing.assert_allclose(two["grad_norm"], one["grad_norm"], rtol=1e-4)
    _close(two["first"], one["first"])
    _close(two["end"], one["end"])
    if optimizer == "sgd":
        assert two["first"] != two["start"]
