"""`run_fn` as TFX's Trainer executor calls it: TensorBoard scalars, SpecAugment on
the training stream only, crash and resume from checkpoints (the data stream
continuing where it stood), and the exported SavedModel's three signatures called
from a fresh process."""
import dataclasses
import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_transform as tft
from tensorboard.backend.event_processing import event_accumulator
from tfx import v1 as tfx
from tfx.components.trainer import fn_args_utils
from tfx.utils import proto_utils

from components import features
from components.config import load_config
from components.training import input_pipeline
from tests import tfx_executors
from tests.test_wav_example_gen import _read_examples, _value

SERVE_SCRIPT = r"""
import json, sys, os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
import tensorflow as tf
model = tf.saved_model.load(sys.argv[1])
examples = [bytes.fromhex(h) for h in json.loads(sys.argv[2])]
wavs = [bytes.fromhex(h) for h in json.loads(sys.argv[3])]
out = {"signatures": sorted(model.signatures)}
for i in range(2):
    ex = model.signatures["serving_default"](examples=tf.constant(examples))
    wav = model.signatures["serve_wav"](wav=tf.constant(wavs))
    feats = model.signatures["transform_features"](examples=tf.constant(examples))
    out[f"run{i}"] = {"examples": ex["probabilities"].numpy().tolist(),
                      "labels": [l.decode() for l in ex["label"].numpy()],
                      "wav": wav["probabilities"].numpy().tolist(),
                      "log_mel": feats["log_mel"].numpy().tolist()}
print("RESULT" + json.dumps(out))
"""


def _config(**trainer_overrides):
    config = load_config(None, ["trainer.backbone=logmel_cnn", "trainer.learning_rate=3e-3",
                                "trainer.grad_accum_steps=1", "trainer.batch_size=8", "features.clip_seconds=0.3"])
    config.trainer = dataclasses.replace(config.trainer, **trainer_overrides)
    return config


@pytest.fixture(scope="module")
def transformed(tmp_path_factory):
    root = tmp_path_factory.mktemp("trainer")
    input_dict = tfx_executors.make_transformed(root, _config())
    tfx_executors.save_input_dict(input_dict, root / "input_dict.json")
    return root, input_dict


def _raw_examples(input_dict, split="eval"):
    return _read_examples(input_dict["examples"][0].uri)[split]


def test_run_fn_logs_scalars_and_exports_signatures_that_serve_in_a_fresh_process(transformed, tmp_path):
    _, input_dict = transformed
    config = _config(epochs=6, log_every_steps=2)
    model = tfx_executors.run_trainer(input_dict, config, tmp_path / "model", tmp_path / "model_run")

    events = event_accumulator.EventAccumulator(str(tmp_path / "model_run"), size_guidance={"tensors": 0})
    events.Reload()
    tags = set(events.Tags()["tensors"])
    assert {"loss", "learning_rate", "loss_scale", "grad_norm", "examples_per_second", "input_wait_fraction",
            "eval_accuracy"} <= tags
    waits = [float(tf.make_ndarray(e.tensor_proto)) for e in events.Tensors("input_wait_fraction")]
    assert all(0.0 < w < 1.0 for w in waits), waits  # some time blocked on the input, never all of it
    # One loss point every log_every_steps, all finite (their values are minibatch noise:
    # whether training learns is proven on held-out data, by the end-to-end tests).
    losses = [float(tf.make_ndarray(e.tensor_proto)) for e in events.Tensors("loss")]
    assert len(losses) >= 3 and np.all(np.isfinite(losses))

    raw = _raw_examples(input_dict)[:6]
    export_dir = os.path.join(model.uri, "Format-Serving")
    proc = subprocess.run(
        [sys.executable, "-c", SERVE_SCRIPT, export_dir,
         json.dumps([e.SerializeToString().hex() for e in raw]),
         json.dumps([_value(e, features.AUDIO).hex() for e in raw])],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.split("RESULT", 1)[1])
    assert out["signatures"] == ["serve_wav", "serving_default", "transform_features"]
    run0, run1 = out["run0"], out["run1"]
    probabilities = np.array(run0["examples"])
    assert probabilities.shape == (6, 3)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(run0["wav"], probabilities, atol=1e-5)
    assert set(run0["labels"]) <= set(tfx_executors.LABELS)
    # No SpecAugment in serving: no masked (all-zero) bands, and repeated calls agree exactly.
    log_mel = np.array(run0["log_mel"])
    assert not np.any(np.all(log_mel == 0, axis=1)) and not np.any(np.all(log_mel == 0, axis=2))
    assert run0 == run1


def test_max_steps_stops_training_there_with_the_learning_rate_decayed_to_zero(transformed, tmp_path):
    _, input_dict = transformed
    per_epoch = math.ceil(input_pipeline.split_size(_fn_args(input_dict).train_files).examples / 8)
    steps = per_epoch + 2  # the second epoch cut short
    config = _config(epochs=50, max_steps=steps, log_every_steps=1, checkpoint_every_steps=1000)
    tfx_executors.run_trainer(input_dict, config, tmp_path / "model", tmp_path / "model_run")
    events = event_accumulator.EventAccumulator(str(tmp_path / "model_run"), size_guidance={"tensors": 0})
    events.Reload()
    assert [e.step for e in events.Tensors("loss")] == list(range(1, steps + 1))
    assert len(events.Tensors("eval_accuracy")) == 2  # the full epoch and the cut one, each evaluated
    rates = [float(tf.make_ndarray(e.tensor_proto)) for e in events.Tensors("learning_rate")]
    # The rate each step used: the linear decay reaches 0 at the cap, so the last step's is one decay step
    # above 0 (without the cap it would still be near the peak, 3e-3).
    warmup = max(1, int(config.trainer.warmup_ratio * steps))
    assert rates[-1] == pytest.approx(config.trainer.learning_rate / (steps - warmup), rel=1e-5)


def _fn_args(input_dict):
    return fn_args_utils.get_common_fn_args(input_dict, {
        "train_args": proto_utils.proto_to_json(tfx.proto.TrainArgs(splits=["train"])),
        "eval_args": proto_utils.proto_to_json(tfx.proto.EvalArgs(splits=["eval"]))})


def _masked_bands(batch):
    log_mel = batch[features.LOG_MEL].numpy()
    return int(np.sum(np.all(log_mel == 0, axis=1)) + np.sum(np.all(log_mel == 0, axis=2)))


def _mask_widths(batches):
    """Per example (masked mel bins, masked frames), as a sorted list: order-free, so shuffling does not matter."""
    widths = []
    for x in batches:
        zero = x[features.LOG_MEL].numpy() == 0
        widths += list(zip(zero.all(axis=1).sum(axis=1), zero.all(axis=2).sum(axis=1)))
    return sorted(widths)


def test_spec_augment_masks_training_batches_with_fresh_masks_each_epoch_and_never_eval(transformed):
    _, input_dict = transformed
    fn_args = _fn_args(input_dict)
    tto = tft.TFTransformOutput(input_dict["transform_graph"][0].uri)
    cfg = _config().trainer  # SpecAugment on: 2 frequency and 2 time masks
    tf.random.set_seed(cfg.seed)  # as run_fn does: masks must still change from epoch to epoch
    train = input_pipeline.make_dataset(fn_args.train_files, tto, 8, cfg, training=True)
    evaluation = input_pipeline.make_dataset(fn_args.train_files, tto, 8, cfg, training=False)
    per_epoch = len(list(evaluation))
    batches = iter(train)  # one iterator for the run, as run_fn reads it
    epoch1 = [next(batches)[0] for _ in range(per_epoch)]
    epoch2 = [next(batches)[0] for _ in range(per_epoch)]
    assert sum(_masked_bands(x) for x in epoch1) > 0
    assert sum(_masked_bands(x) for x, _ in evaluation) == 0
    assert _mask_widths(epoch1) != _mask_widths(epoch2)  # new masks drawn in the second epoch


def test_the_training_stream_starts_on_iterator_creation_and_the_eval_stream_on_demand(transformed):
    # Warm start: the Trainer traces its step while the training stream fills (trainer._train).
    _, input_dict = transformed
    fn_args = _fn_args(input_dict)
    tto = tft.TFTransformOutput(input_dict["transform_graph"][0].uri)
    cfg = _config().trainer
    for training in (True, False):
        ds = input_pipeline.make_dataset(fn_args.train_files, tto, 8, cfg, training=training)
        assert ds.options().experimental_warm_start is training


def test_each_epoch_evaluates_the_whole_eval_split_once_through_one_iterator(transformed):
    """The Trainer's per-epoch evaluation reads a repeated dataset through one iterator:
    every call must cover exactly one pass (a batch too few or too many would shift the
    next call's), and give what a fresh pass over the split gives."""
    from components.models.model import build_model
    from components.training.trainer import _make_evaluate

    _, input_dict = transformed
    fn_args = _fn_args(input_dict)
    tto = tft.TFTransformOutput(input_dict["transform_graph"][0].uri)
    config = _config()
    cfg = config.trainer
    size = input_pipeline.split_size(fn_args.train_files)  # the train split: more examples than eval's
    batch = 7
    assert size.examples % batch, size  # a short last batch, which a miscount would misplace
    model = build_model(cfg, config.features, tto.vocabulary_size_by_name(features.LABEL_VOCAB))
    dataset = input_pipeline.make_dataset(fn_args.train_files, tto, batch, cfg, training=False)
    correct = sum(int(np.sum(np.argmax(model(x, training=False)[features.LOGITS], -1) == y[features.LABEL_ID]))
                  for x, y in dataset)
    evaluate = _make_evaluate(model, dataset, size.examples, batch)
    for _ in range(3):
        result = evaluate()
        assert result["eval_examples"] == size.examples
        assert result["eval_accuracy"] == pytest.approx(correct / size.examples, abs=1e-6)


def test_the_training_stream_is_a_function_of_the_trainer_seed_whatever_the_global_seed(transformed):
    """run_fn sets TensorFlow's global seed to trainer.seed; 0 is a seed users pick."""
    _, input_dict = transformed
    fn_args = _fn_args(input_dict)
    tto = tft.TFTransformOutput(input_dict["transform_graph"][0].uri)

    def labels(cfg, global_seed):
        tf.random.set_seed(global_seed)
        ds = input_pipeline.make_dataset(fn_args.train_files, tto, 8, cfg, training=True)
        return np.concatenate([y[features.LABEL_ID].numpy() for _, y in ds.take(6)])

    cfg = _config(seed=0).trainer
    order = labels(cfg, 0)
    np.testing.assert_array_equal(labels(cfg, 12345), order)
    assert not np.array_equal(labels(dataclasses.replace(cfg, seed=1), 0), order)


def _stream(fn_args, tto, cfg, batch_size, steps, start_step=0):
    """The examples (log-mel, label) of the first `steps` training batches of a run starting at `start_step`."""
    tf.random.set_seed(cfg.seed)  # as run_fn does
    ds = input_pipeline.make_dataset(fn_args.train_files, tto, batch_size, cfg, training=True,
                              start_step=start_step)
    return [(mel, label) for x, y in ds.take(steps)
            for mel, label in zip(x[features.LOG_MEL].numpy(), y[features.LABEL_ID].numpy())]


@pytest.mark.parametrize("augment", [False, True], ids=["order", "order_and_masks"])
def test_a_resumed_run_reads_what_the_uninterrupted_run_reads_from_that_step_on(transformed, augment):
    _, input_dict = transformed
    fn_args = _fn_args(input_dict)
    tto = tft.TFTransformOutput(input_dict["transform_graph"][0].uri)
    cfg = _config().trainer
    cfg = dataclasses.replace(cfg, spec_augment=dataclasses.replace(cfg.spec_augment, enabled=augment))
    batch_size = 4
    examples = int(input_pipeline.make_dataset(fn_args.train_files, tto, batch_size, cfg,
                                           training=False).unbatch().reduce(0, lambda n, _: n + 1))
    assert input_pipeline.split_size(fn_args.train_files).examples == examples  # what run_fn sizes epochs with
    per_epoch = -(-examples // batch_size)
    resume_at = 2 * per_epoch + 1  # in the third epoch, not on an epoch boundary
    epoch, offset = divmod(resume_at * batch_size, examples)
    assert epoch >= 1 and offset
    uninterrupted = _stream(fn_args, tto, cfg, batch_size, resume_at + per_epoch)
    resumed = _stream(fn_args, tto, cfg, batch_size, per_epoch, start_step=resume_at)
    for (mel, label), (resumed_mel, resumed_label) in zip(uninterrupted[resume_at * batch_size:], resumed):
        np.testing.assert_array_equal(resumed_mel, mel)
        assert resumed_label == label
    # ... which is not a replay of the first epoch: positions offset.. of this epoch hold other
    # examples (another order) than the same positions of epoch 0, under other masks.
    this_epoch = resumed[:examples - offset]
    first_epoch = uninterrupted[offset:examples]
    assert not all(np.array_equal(a[0], b[0]) for a, b in zip(this_epoch, first_epoch))
    if augment:
        assert _masked_bands({features.LOG_MEL: tf.constant(np.stack([mel for mel, _ in resumed]))}) > 0
        assert not all(np.array_equal(a[0] == 0, b[0] == 0) for a, b in zip(this_epoch, first_epoch))


def test_training_killed_mid_run_resumes_from_the_last_checkpoint(transformed, tmp_path):
    root, _ = transformed
    config = _config(epochs=60, checkpoint_every_steps=5, log_every_steps=5)
    args = [sys.executable, "-m", "tests.tfx_executors", str(root / "input_dict.json"),
            json.dumps(config.to_dict()), str(tmp_path / "model"), str(tmp_path / "model_run")]
    checkpoints = tmp_path / "model_run" / "checkpoints"
    first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 300
    while not (checkpoints / "checkpoint").exists() and first.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)
    first.send_signal(signal.SIGKILL)
    first.communicate()
    assert first.returncode == -signal.SIGKILL, "training ended before it could be killed"
    saved = tf.train.get_checkpoint_state(str(checkpoints)).model_checkpoint_path
    killed_at = int(saved.rsplit("-", 1)[1])

    second = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-3000:]
    log = second.stdout + second.stderr
    assert f"at step {killed_at} of" in log and killed_at > 0
    assert f"Training data resumes at step {killed_at}: epoch" in log  # the data stream too
    total = int(log.split(f"at step {killed_at} of ", 1)[1].split()[0])
    assert killed_at < total
    steps_logged = [int(line.split("step ", 1)[1].split("/")[0]) for line in log.splitlines()
                    if "] step " in line or "absl:step " in line]
    assert steps_logged and min(steps_logged) > killed_at  # continued, did not restart at 0
    final = tf.train.get_checkpoint_state(str(checkpoints)).model_checkpoint_path
    assert int(final.rsplit("-", 1)[1]) == total


def test_mixed_float16_training_exports_a_float32_saved_model(transformed, tmp_path):
    _, input_dict = transformed
    model = tfx_executors.run_trainer(input_dict, _config(epochs=2, precision="mixed_float16"),
                                      tmp_path / "model", tmp_path / "model_run")
    loaded = tf.saved_model.load(os.path.join(model.uri, "Format-Serving"))
    assert loaded.model.variables and all(v.dtype == tf.float32 for v in loaded.model.variables)
    signature = loaded.signatures["serve_wav"]
    graph = signature.graph.as_graph_def()
    half = [node.name for fn in [graph, *graph.library.function]
            for node in getattr(fn, "node", getattr(fn, "node_def", []))
            if any(attr.type == tf.float16.as_datatype_enum for attr in node.attr.values())]
    assert not half, half[:5]
    wav = _value(_raw_examples(input_dict)[0], features.AUDIO)
    assert signature(wav=tf.constant([wav]))[features.OUT_PROBABILITIES].dtype == tf.float32


def test_the_input_cache_is_chosen_by_size_and_changes_nothing_but_memory(transformed, tmp_path):
    _, input_dict = transformed
    fn_args = _fn_args(input_dict)
    tto = tft.TFTransformOutput(input_dict["transform_graph"][0].uri)
    cfg, cfg_features = _config().trainer, _config().features
    mb = 2 ** 20
    auto = dataclasses.replace(cfg, cache="auto", cache_budget_mb=1, cache_disk_budget_mb=0)
    choice = input_pipeline.cache_choice
    assert choice(auto, mb // 10, input_pipeline.SplitSize(9, 1), input_pipeline.SplitSize(1, 1)) == "features"
    split = input_pipeline.SplitSize
    assert choice(auto, mb // 10 + 1, split(9, mb // 2), split(1, mb // 2)) == "records"
    assert choice(auto, mb, input_pipeline.SplitSize(9, mb // 2), input_pipeline.SplitSize(1, mb // 2 + 1)) == "none"
    for forced in ("features", "disk", "records", "none"):
        assert choice(dataclasses.replace(auto, cache=forced), 9 * mb, input_pipeline.SplitSize(1, 9 * mb)) == forced
    # Features past the memory budget go to disk when they fit its budget, before the records in memory.
    on_disk = dataclasses.replace(auto, cache_disk_budget_mb=2)
    assert choice(on_disk, mb // 5, split(9, 1), split(1, 1)) == "disk"
    assert choice(on_disk, mb // 5 + 1, split(9, 1), split(1, 1)) == "records"
    assert choice(auto, mb // 5, split(9, 1), split(1, 1)) == "records"  # 0 MB: never on disk
    per_example = input_pipeline.feature_bytes(tto, cfg)
    frames, bins = cfg_features.num_frames, cfg_features.num_mel_bins
    assert per_example == frames * bins * 4 + 8  # logmel_cnn: the float32 log-mel and the int64 label

    disk = str(tmp_path / "cache" / "train")
    disk_folder = str(tmp_path / "cache")

    def batches(cache):
        ds = input_pipeline.make_dataset(fn_args.train_files, tto, 5, cfg, training=True, cache=cache,
                                         cache_path=disk)
        return [(x[features.LOG_MEL].numpy(), y[features.LABEL_ID].numpy()) for x, y in ds.take(12)]

    uncached = batches("none")
    written = None
    # 12 batches of 5 cross the first epoch's end: the disk cache is written whole, then read.
    assert 12 * 5 > input_pipeline.split_size(fn_args.train_files).examples
    for cache in ("records", "features", "disk", "disk"):  # the second disk run reads the first one's files
        whole_before = cache == "disk" and input_pipeline.prepare_disk_cache(disk)
        for (mel, label), (cached_mel, cached_label) in zip(uncached, batches(cache), strict=True):
            # Same examples, order and masks; the float sums may round apart between modes.
            np.testing.assert_allclose(cached_mel, mel, rtol=0, atol=1e-4)  # unit-scale features
            np.testing.assert_array_equal(cached_mel == 0, mel == 0)
            np.testing.assert_array_equal(cached_label, label)
        if cache == "disk":
            assert input_pipeline.prepare_disk_cache(disk), "the first epoch wrote the cache whole"
            files = {name: os.stat(os.path.join(disk_folder, name)).st_mtime_ns for name in os.listdir(disk_folder)}
            if whole_before:  # read, not written again: the first run's files, untouched
                assert files == written
            written = files
    # A run killed while writing leaves a lock file: the next one deletes the part and writes anew.
    open(disk + ".lockfile", "w").close()
    assert not input_pipeline.prepare_disk_cache(disk)
    assert os.listdir(disk_folder) == []

    # The split sizes the ExampleGen recorded are those of its files; files from elsewhere are counted.
    recorded = input_pipeline.split_size(fn_args.train_files)
    copy = tmp_path / "other" / "Split-train"
    copy.mkdir(parents=True)
    for path in tf.io.gfile.glob(fn_args.train_files[0]):
        tf.io.gfile.copy(path, str(copy / os.path.basename(path)))
    assert input_pipeline.split_size([str(copy / "*")]) == recorded
    assert recorded.examples == sum(1 for _ in input_pipeline.records(fn_args.train_files))


def _anonymous_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("RssAnon:")) / 1024


def test_the_disk_cache_does_not_also_keep_what_it_writes_in_memory(tmp_path):
    # Examples unbatched from batches, as the Trainer's featurized stream gives them: tf.data's file cache
    # alone kept all of them in memory (2.5 GB for 2.4 GB written, in a probe of this stream).
    count, floats = 2000, 60000  # 0.24 MB an example, as a featurized 10-s clip: 458 MB in all
    stream = (tf.data.Dataset.range(count)
              .map(lambda i: {"x": tf.random.stateless_uniform([floats], tf.stack([i, i])), "i": i})
              .batch(16).map(lambda b: b, num_parallel_calls=tf.data.AUTOTUNE).unbatch())
    path = str(tmp_path / "cache" / "train")
    input_pipeline.prepare_disk_cache(path)
    cached = input_pipeline.disk_cache(stream, path)
    before, peak, seen = _anonymous_mb(), 0.0, []
    for k, example in enumerate(cached):
        seen.append(int(example["i"]))
        if k % 100 == 0:
            peak = max(peak, _anonymous_mb())
    written = count * floats * 4 / 2 ** 20
    assert seen == list(range(count))
    assert input_pipeline.prepare_disk_cache(path), "the pass wrote the cache whole"
    assert peak - before < 0.3 * written, (before, peak, written)
    again = next(iter(cached))  # read back from the files: the same values
    np.testing.assert_array_equal(again["x"].numpy(), next(iter(stream))["x"].numpy())


def test_the_shuffle_buffer_is_capped_in_bytes_so_long_clips_do_not_grow_it(transformed):
    mb = 2 ** 20
    cfg = dataclasses.replace(_config().trainer, shuffle_buffer=2048, shuffle_buffer_mb=256)
    ten_second_pairs = input_pipeline.SplitSize(35000, 35000 * 640_000)  # 0.64 MB a record
    one_second_keywords = input_pipeline.SplitSize(35000, 35000 * 32_000)
    assert input_pipeline.shuffle_examples(cfg, ten_second_pairs) == 256 * mb // 640_000  # the bytes cap
    assert input_pipeline.shuffle_examples(cfg, one_second_keywords) == 2048  # the example cap
    assert input_pipeline.shuffle_examples(cfg, input_pipeline.SplitSize(10, 10 * 300 * mb)) == 1  # never 0

    # The cap reaches the training stream: records larger than the cap leave a buffer of one,
    # so the first epoch is the files' order, which the uncapped buffer shuffles.
    _, input_dict = transformed
    fn_args = _fn_args(input_dict)
    tto = tft.TFTransformOutput(input_dict["transform_graph"][0].uri)
    cfg = dataclasses.replace(cfg, spec_augment=dataclasses.replace(cfg.spec_augment, enabled=False))
    real = input_pipeline.split_size(fn_args.train_files)
    in_file_order = np.concatenate([y[features.LABEL_ID].numpy() for _, y in input_pipeline.make_dataset(
        fn_args.train_files, tto, real.examples, cfg, training=False)])

    def first_epoch(split):
        x, y = next(iter(input_pipeline.make_dataset(fn_args.train_files, tto, real.examples, cfg, training=True,
                                                 split=split)))
        return y[features.LABEL_ID].numpy()

    np.testing.assert_array_equal(first_epoch(input_pipeline.SplitSize(real.examples, real.examples * 300 * mb)),
                                  in_file_order)
    assert not np.array_equal(first_epoch(real), in_file_order)


def test_an_empty_training_split_is_a_clear_error_not_an_endless_wait(transformed, tmp_path):
    """All of a corpus's groups can hash to one split; the training stream of an empty
    split would wait forever for its first batch."""
    _, input_dict = transformed
    empty = tmp_path / "examples"
    for split in ("train", "eval"):
        (empty / f"Split-{split}").mkdir(parents=True)
        with tf.io.TFRecordWriter(str(empty / f"Split-{split}" / "data_tfrecord-00000-of-00001.gz"),
                                  options="GZIP"):
            pass
    examples = tfx_executors._artifact(type(input_dict["examples"][0]), empty, ["train", "eval"])
    with pytest.raises(ValueError, match=r"training split has no examples \(.*Split-train"):
        tfx_executors.run_trainer(dict(input_dict, examples=[examples]), _config(), tmp_path / "m", tmp_path / "r")


def test_the_attenuation_limit_mixes_the_noisy_input_back_in_every_served_output(transformed, tmp_path):
    """trainer.denoiser.attenuation_limit_db (DeepFilterNet's atten_lim): served enhanced audio =
    (1 - g) x the denoiser's + g x the noisy input, g = 10^(-limit/20); one model exported both ways."""
    import io

    import soundfile

    from components.audio import wav_io
    from components.models.model import build_model, input_keys
    from components.serving.export import export_saved_model

    _, input_dict = transformed
    config = load_config(None, ["trainer.backbone=logmel_cnn", "features.clip_seconds=0.3",
                                "trainer.denoiser.enabled=true", "trainer.denoiser.design=dtln",
                                "trainer.denoiser.lstm_units=8", "trainer.denoiser.encoder_size=16"])
    tto = tft.TFTransformOutput(input_dict["transform_graph"][0].uri)
    model = build_model(config.trainer, config.features, tto.vocabulary_size_by_name(features.LABEL_VOCAB))
    raw = _raw_examples(input_dict)[:4]
    wavs = tf.constant([_value(e, features.AUDIO) for e in raw])
    served = {}
    for limit in (None, 10.0):
        export_dir = str(tmp_path / f"limit-{limit}")
        export_saved_model(model, tto, input_keys(config.trainer), config.features.num_samples, export_dir, limit)
        loaded = tf.saved_model.load(export_dir)
        examples = tf.constant([e.SerializeToString() for e in raw])
        served[limit] = (loaded.signatures["serving_default"](examples=examples),
                         loaded.signatures["denoise_wav"](wav=wavs[0]))
    share = 10.0 ** (-10.0 / 20.0)
    noisy = tto.transform_raw_features({features.AUDIO: tf.reshape(wavs, [-1, 1])})[features.WAVEFORM]
    plain, limited = served[None][0][features.OUT_ENHANCED], served[10.0][0][features.OUT_ENHANCED]
    assert not np.allclose(plain, noisy, atol=1e-3)  # the denoiser changes the audio: the mix is visible
    np.testing.assert_allclose(limited, (1 - share) * plain + share * noisy, atol=1e-5)

    def samples(out):
        return soundfile.read(io.BytesIO(out[features.OUT_ENHANCED_WAV].numpy()), dtype="float32")[0]
    noisy_wav = wav_io.decode_to_mono_16k(_value(raw[0], features.AUDIO))
    np.testing.assert_allclose(samples(served[10.0][1]), (1 - share) * samples(served[None][1]) + share * noisy_wav,
                               atol=3 / 32768)  # PCM16 rounding of three signals

    # The benchmarks' --front-end (a configuration's denoiser without a trained model) computes what denoise_wav serves
    from benchmarks import whole_recordings
    from components.models import denoiser_weights
    weights = denoiser_weights.save(model.denoiser, str(tmp_path / "front-end"))
    front_end = whole_recordings.front_end(None, ["enabled=true", "design=dtln", "lstm_units=8", "encoder_size=16",
                                                  f"warm_start={weights}"])
    np.testing.assert_allclose(front_end(noisy_wav, 16000), samples(served[None][1]), atol=2 / 32768)
