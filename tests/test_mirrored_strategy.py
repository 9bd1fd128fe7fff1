"""The compiled step under MirroredStrategy with two replicas. No GPUs here, so the
replicas are two logical CPU devices (set up in a fresh process, before TF
initializes its devices); the code path (strategy.run, cross-replica reduce, the
LossScaleOptimizer's all-reduce and finite check) is the one several GPUs take."""
import json
import subprocess
import sys

SCRIPT = r"""
import json, os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from components import features, training_loop
from components.model import build_model
from components.config import FeatureConfig, TrainerConfig

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
cfg = TrainerConfig(backbone="logmel_cnn", learning_rate=3e-3, batch_size=8, grad_accum_steps=1)
global_batch = cfg.batch_size * strategy.num_replicas_in_sync
rng = np.random.default_rng(0)
y = rng.integers(0, 3, 64)
x = rng.normal(0, 1, (64, 20, 16)).astype(np.float32)
for i, label in enumerate(y):
    x[i, :, label * 5:(label + 1) * 5] += 3.0
ds = tf.data.Dataset.from_tensor_slices(({features.LOG_MEL: x}, y.astype(np.int64))).batch(global_batch)
with strategy.scope():
    model = build_model(cfg, FeatureConfig(clip_seconds=0.215, num_mel_bins=16), 3)
    optimizer = training_loop.build_optimizer(cfg, total_steps=80)
    optimizer.build(model.trainable_variables)
dist = strategy.experimental_distribute_dataset(ds)
step = training_loop.make_train_step(model, optimizer, strategy, dist.element_spec, cfg.batch_size, 1)
losses = []
for epoch in range(10):
    total = 0.0
    for batch in dist:
        out = step(batch)
        total += float(out["loss"])
    losses.append(total)
print("RESULT" + json.dumps({"replicas": strategy.num_replicas_in_sync, "count": float(out["count"]),
                             "losses": losses, "traces": step.experimental_get_tracing_count(),
                             "iterations": int(tf.convert_to_tensor(optimizer.iterations).numpy())}))
"""


def test_two_replicas_share_the_global_batch_and_train():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.split("RESULT", 1)[1])
    assert out["replicas"] == 2
    assert out["count"] == 16  # the last global batch: 8 per replica, summed over both
    assert out["iterations"] == 40  # 4 global batches of 16 per epoch, one optimizer step each
    assert out["traces"] == 1
    assert out["losses"][-1] < 0.5 * out["losses"][0]
