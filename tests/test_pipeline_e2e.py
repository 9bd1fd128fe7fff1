"""End to end: the whole TFX pipeline on LocalDagRunner with SQLite ML Metadata,
checked from MLMD and the artifacts, then a second, deliberately broken run that
the Evaluator's gates keep from being pushed."""
import csv
import dataclasses
import glob
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import soundfile
import tensorflow as tf
import tensorflow_transform as tft

from components import features
from components.audio import wav_io
from components.audio.snr import improvement_db, si_snr_db
from components.config import load_config
from components.evaluation import tfma_snr
from components.evaluation.evaluator import HELDOUT_SPLIT
from components.models.model import build_model
from components.training import input_pipeline, resume
from pipeline import local_runner
from pipeline.datagen import heldout as heldout_data
from pipeline.datagen import keywords as demo_data
from pipeline.outcome import ExitCode
from tests.test_report import ARTIFACTS, assert_report_renders
from tests.test_wav_example_gen import _read_examples, _value, assert_seconds_add_up

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODES = {"WavExampleGen", "StatisticsGen", "ImportSchemaGen", "ConfiguredSchema", "ExampleValidator",
         "AnomaliesGate", "Transform", "Trainer", "latest_blessed_model_resolver", "Evaluator", "Pusher"}
HELDOUT_NODES = {"HeldoutExampleGen", "HeldoutEvaluator"}
WORDS = 4
# Floors near what this test's data gives (measured 2026-11-30: accuracy 0.94 on 64 test
# windows, SI-SNR improvement 1.62 and 1.67 dB in two runs): a model at two thirds of
# that fails. An untrained denoiser (a near-constant mask) sits near 0 dB.
MIN_ACCURACY = 0.80
MIN_SI_SNRI = 1.1  # dB
# The floors were calibrated on a denoiser trained in the run, jointly with the classifier (the demo now
# holds its pretrained one, which the broken second run could not break): that recipe, on the demo's settings.
JOINT_RECIPE = ["trainer.objective=joint", "trainer.denoiser.design=conv_bigru", "trainer.denoiser.warm_start=''",
                "trainer.denoiser.trainable=true", "trainer.augment.placement_probability=0.0",
                "trainer.background.probability=0.0"]


def _run(config, expected_code=ExitCode.OK):
    """`tfx-audio run`: the whole pipeline on LocalDagRunner; checks the exit code CI gates on."""
    code, run = local_runner.run(config, verbose=True)
    assert code == expected_code, run.text() if run else code
    return run


def assert_serving_matches_training(run, config, loaded, raw_test_examples):
    """No training/serving skew: the features the Trainer's input pipeline computes from
    the ExampleGen's test records are the ones the pushed model computes from the raw
    audio, and the model the Trainer checkpointed, run on them, gives serve_wav's
    probabilities."""
    tft_output = tft.TFTransformOutput(run.artifacts["Transform"]["transform_graph"][0].uri)
    test_files = os.path.join(run.artifacts["WavExampleGen"]["examples"][0].uri, "Split-test", "*")
    x, y = next(iter(input_pipeline.make_dataset([test_files], tft_output, 1000, config.trainer, training=False)))
    raw = list(raw_test_examples)
    served = loaded.signatures["transform_features"](examples=tf.constant([e.SerializeToString() for e in raw]))
    assert x[features.WAVEFORM].shape[0] == len(raw)
    # Pair each of the Trainer's examples with the raw example serving turns into the same waveform.
    distance = tf.reduce_max(tf.abs(x[features.WAVEFORM][:, None, :] - served[features.WAVEFORM][None]), -1)
    match = tf.argmin(distance, axis=1).numpy()
    assert sorted(match) == list(range(len(raw)))  # one to one
    assert float(tf.reduce_max(tf.reduce_min(distance, axis=1))) < 1e-5
    for key, value in {**x, **y}.items():
        np.testing.assert_allclose(value, tf.gather(served[key], match), atol=1e-4, err_msg=key)

    num_classes = tft_output.vocabulary_size_by_name(features.LABEL_VOCAB)
    trained = build_model(config.trainer, config.features, num_classes)
    checkpoints = os.path.join(run.artifacts["Trainer"]["model_run"][0].uri, "checkpoints")
    tf.train.Checkpoint(model=trained).restore(tf.train.latest_checkpoint(checkpoints)).expect_partial() \
        .assert_existing_objects_matched()
    logits = trained(x, training=False)[features.LOGITS]
    by_wav = loaded.signatures["serve_wav"](wav=tf.constant([_value(raw[i], features.AUDIO) for i in match]))
    np.testing.assert_allclose(tf.nn.softmax(logits).numpy(), by_wav[features.OUT_PROBABILITIES].numpy(),
                               atol=1e-4)


def assert_heldout_evaluated(run):
    """The held-out corpus went through its own ExampleGen to its own Evaluator, which
    scored the Trainer's model (the one pushed; there is no blessed model before it) on it: clean clips on
    both channels, every noisy one with its reference, reported beside the test split and not gated."""
    assert run.split_counts[HELDOUT_SPLIT] == 40 and "train" in run.split_counts
    assert run.inputs["HeldoutEvaluator"]["model"][0].uri == run.artifacts["Trainer"]["model"][0].uri
    assert "baseline_model" not in run.inputs["HeldoutEvaluator"]  # the first blessed model: no baseline yet
    held, slices = run.heldout_metrics, run.heldout_slice_metrics
    assert held["example_count"] == 40 and 0 <= held["sparse_categorical_accuracy"] <= 1
    assert held[tfma_snr.SCORED] == 24 and held[tfma_snr.NO_REFERENCE] == 16  # 3 noisy, 2 clean per utterance
    assert np.isfinite(held[tfma_snr.SI_SNR_IMPROVEMENT])
    assert slices[f"{features.SNR_BUCKET}={features.NO_REFERENCE}"]["example_count"] == 16
    assert {name for name in slices if name.startswith(f"{features.NOISE_KIND}=")} == {
        f"{features.NOISE_KIND}={kind}" for kind in heldout_data.HELDOUT_NOISE_KINDS}
    for ch in heldout_data.CHANNELS:
        assert slices[f"{features.CHANNEL}={ch}"]["example_count"] == 20
        assert slices[f"{features.CHANNEL}={ch},{features.SNR_BUCKET}={features.NO_REFERENCE}"]["example_count"] == 8
    assert f"sparse_categorical_accuracy {run.metrics['sparse_categorical_accuracy']:.4g} vs " \
           f"{held['sparse_categorical_accuracy']:.4g}" in run.text()
    # which corpus (and so which part: demo_heldout/validation or demo_heldout/test) the figures are from
    assert run.heldout_corpus().endswith("/heldout") and f"vs held-out ({run.heldout_corpus()}):" in run.text()
    assert f"held-out accuracy, 95 % interval from its {int(held['example_count'])} examples alone" in run.text()


def _kill_in_training(overrides, config) -> int:
    """`tfx-audio run` in a process of its own, killed (SIGKILL) once the Trainer saved a
    checkpoint; returns that checkpoint's step."""
    args = [sys.executable, "-m", "pipeline.cli", "run", "--config", "pipeline/configs/demo.yaml",
            *[f"--set={o}" for o in overrides]]
    crashed = subprocess.Popen(args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    states = os.path.join(config.pipeline_root, "Trainer", "model_run", "*", "checkpoints", "checkpoint")
    deadline = time.time() + 900
    while not glob.glob(states) and crashed.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    os.killpg(crashed.pid, signal.SIGKILL)
    _, err = crashed.communicate()
    assert crashed.returncode == -signal.SIGKILL, f"the run ended before it could be killed: {err[-2000:]}"
    checkpoint = tf.train.latest_checkpoint(os.path.dirname(glob.glob(states)[0]))
    return int(checkpoint.rsplit("-", 1)[1])


@pytest.mark.e2e
def test_pipeline_resumes_after_a_crash_trains_blesses_pushes_and_refuses_a_broken_model(small_demo, tmp_path):
    heldout = tmp_path / "heldout"  # 2 held-out voices x 4 words x (2 clean + 3 noisy)
    heldout_data.generate(str(heldout), words=demo_data.WORDS[:WORDS], voice_count=2)
    overrides = [f"data.input_base={small_demo}", f"output_dir={tmp_path / 'out'}", "name=e2e",
                 f"evaluator.heldout_base={heldout}",
                 "data.split_buckets={train: 6, eval: 2, test: 2}", "trainer.epochs=30",
                 "trainer.checkpoint_every_steps=20",
                 "trainer.cache=disk",  # the crashed run's featurized examples, adopted by the resumed one
                 "trainer.vtlp.probability=0.0",  # the thresholds' calibration; tests/test_vtlp.py covers VTLP
                 "trainer.backbone=logmel_cnn",  # the thresholds' calibration too (and a third of bc_resnet's time)
                 f"evaluator.min_accuracy={MIN_ACCURACY}", f"evaluator.min_si_snr_improvement_db={MIN_SI_SNRI}",
                 "beam_args=[]", *JOINT_RECIPE]
    config = load_config("pipeline/configs/demo.yaml", overrides)
    assert config.trainer.objective == "joint" and config.trainer.denoiser.enabled
    # A run killed in the Trainer (kill -9), then `tfx-audio run` again: the completed
    # components come from the cache, the Trainer resumes at the checkpointed step.
    killed_at = _kill_in_training(overrides, config)
    first = _run(config)  # exit code 0: blessed and pushed

    assert set(first.node_states) == NODES | HELDOUT_NODES
    cached = {node for node, state in first.node_states.items() if state == "CACHED"}
    assert cached == {"WavExampleGen", "StatisticsGen", "ImportSchemaGen", "ConfiguredSchema", "ExampleValidator",
                      "AnomaliesGate", "Transform", "HeldoutExampleGen"}, first.node_states
    assert all(first.node_states[node] == "COMPLETE" for node in ("Trainer", "Evaluator", "HeldoutEvaluator",
                                                                    "Pusher"))
    with open(os.path.join(first.artifacts["Trainer"]["model_run"][0].uri, resume.RESUMED_FILE)) as f:
        resumed = json.load(f)
    assert 0 < killed_at == resumed["step"], resumed
    # The crashed run's disk cache moved to the resumed run, which deleted it when it finished.
    model_runs = os.path.dirname(first.artifacts["Trainer"]["model_run"][0].uri.rstrip("/"))
    assert len(os.listdir(model_runs)) >= 2 and not glob.glob(os.path.join(model_runs, "*", resume.CACHE_DIR))
    assert first.input_files == 192 and first.rejected == 0  # 4 words x 24 speakers x (clean + noisy)
    in_domain = {split: n for split, n in first.split_counts.items() if split != HELDOUT_SPLIT}
    assert sum(in_domain.values()) == 192 and all(in_domain.values())
    accuracy = first.metrics["sparse_categorical_accuracy"]
    assert accuracy >= MIN_ACCURACY, first.text()
    assert first.metrics["example_count"] == first.split_counts["test"]
    # Denoising metrics: every noisy test example scored, the clean ones counted apart.
    assert first.metrics[tfma_snr.SI_SNR_IMPROVEMENT] >= MIN_SI_SNRI, first.text()
    assert np.isfinite(first.metrics[tfma_snr.SNR_IMPROVEMENT])
    assert first.metrics[tfma_snr.SCORED] + first.metrics[tfma_snr.NO_REFERENCE] + \
        first.metrics[tfma_snr.UNDEFINED] == first.split_counts["test"]
    assert first.metrics[tfma_snr.NO_REFERENCE] == first.split_counts["test"] / 2  # one noisy copy each
    slices = [dict(part.split("=", 1) for part in name.split(",")) for name in first.slice_metrics]
    kinds = {cols[features.NOISE_KIND] for cols in slices if features.NOISE_KIND in cols}
    assert kinds <= set(demo_data.NOISE_KINDS) and len(kinds) >= 3, first.slice_metrics.keys()
    for name, values in first.slice_metrics.items():  # every slice scored: no gated metric missing
        assert values[tfma_snr.SCORED] > 0 and tfma_snr.SI_SNR_IMPROVEMENT in values, name
    buckets = {cols[features.SNR_BUCKET] for cols in slices if features.SNR_BUCKET in cols}
    assert {"0-5", "5-10", "10-20"} <= buckets and features.NO_REFERENCE not in buckets, first.slice_metrics.keys()
    assert tfma_snr.SI_SNR_IMPROVEMENT in first.slice_metrics[f"{features.SNR_BUCKET}=0-5"]
    assert first.blessed and first.pushed and not first.failed_checks
    assert_heldout_evaluated(first)
    assert tf.io.gfile.exists(os.path.join(first.pushed_destination, "saved_model.pb"))

    # Every second accounted: the keywords are shorter than the window, so all of them.
    seconds = assert_seconds_add_up(first.artifacts["WavExampleGen"]["examples"][0])
    assert seconds["seconds_in_examples"] == pytest.approx(seconds["seconds_in"]) and not seconds["dropped"]

    # No speaker group is in two splits.
    examples_uri = first.artifacts["WavExampleGen"]["examples"][0].uri
    splits = _read_examples(examples_uri)
    groups = {name: {_value(e, features.GROUP) for e in exs} for name, exs in splits.items()}
    assert not (groups["train"] & groups["eval"] or groups["train"] & groups["test"]
                or groups["eval"] & groups["test"])

    # The pushed model serves raw tf.Examples and raw WAV bytes alike; serve_wav also
    # returns the enhanced audio as 16 kHz PCM16 WAV at the input's level.
    loaded = tf.saved_model.load(first.pushed_destination)
    test_examples = [e for e in splits["test"] if features.CLEAN_AUDIO in e.features.feature][:8]
    by_example = loaded.signatures["serving_default"](
        examples=tf.constant([e.SerializeToString() for e in test_examples]))
    by_wav = loaded.signatures["serve_wav"](
        wav=tf.constant([_value(e, features.AUDIO) for e in test_examples]))
    probabilities = by_example[features.OUT_PROBABILITIES].numpy()
    assert probabilities.shape == (8, WORDS)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(by_wav[features.OUT_PROBABILITIES].numpy(), probabilities, atol=1e-5)
    predicted = [p.decode() for p in by_example[features.OUT_LABEL].numpy()]
    assert set(predicted) <= {_value(e, features.LABEL).decode() for e in splits["train"]}
    gains = []
    for example, wav in zip(test_examples, by_wav[features.OUT_ENHANCED_WAV].numpy()):
        enhanced, rate = soundfile.read(io.BytesIO(wav), dtype="float32")
        assert rate == features.SAMPLE_RATE and soundfile.info(io.BytesIO(wav)).subtype == "PCM_16"
        noisy = wav_io.decode_to_mono_16k(_value(example, features.AUDIO))
        clean = wav_io.decode_to_mono_16k(_value(example, features.CLEAN_AUDIO))
        n = min(len(noisy), config.features.num_samples)
        assert enhanced.shape == (n,)
        gains.append(improvement_db(si_snr_db, clean[:n], noisy[:n], enhanced))
    assert np.mean(gains) > 0, gains  # the served audio is cleaner than what came in
    assert_serving_matches_training(first, config, loaded, splits["test"])

    # denoise_wav enhances a whole recording, whatever its length.
    long_noisy = np.concatenate([wav_io.decode_to_mono_16k(_value(e, features.AUDIO)) for e in test_examples])
    whole = loaded.signatures["denoise_wav"](wav=tf.constant(wav_io.encode_pcm16_wav(long_noisy)))
    enhanced, rate = soundfile.read(io.BytesIO(whole[features.OUT_ENHANCED_WAV].numpy()), dtype="float32")
    assert rate == features.SAMPLE_RATE and enhanced.shape == long_noisy.shape

    _assert_report(first, "report-e2e.png")
    # The resumed Trainer's curves start with the stopped execution's steps.
    loss_steps = [int(row["step"]) for row in _report_rows(first, "training_curves") if row["tag"] == "loss"]
    assert min(loss_steps) <= killed_at < max(loss_steps), (killed_at, loss_steps)

    # Second run: a deliberately broken model (learning rate 0: the weights stay random).
    # The resolver hands the first run's blessed model to both Evaluators as their baseline;
    # the broken one fails the floors and the comparison, and is not pushed.
    # With the cache on, as a retraining with new Trainer settings would run: the data half and
    # the Transform come from the cache (the Transform is keyed on the feature settings alone).
    broken = dataclasses.replace(config, enable_cache=True,
                                 trainer=dataclasses.replace(config.trainer, learning_rate=0.0, epochs=1))
    second = _run(broken, ExitCode.NOT_BLESSED)
    reused = {node for node, state in second.node_states.items() if state == "CACHED"}
    assert reused == cached, second.node_states
    assert all(second.node_states[node] == "COMPLETE" for node in set(second.node_states) - reused), \
        second.node_states
    first_model = first.artifacts["Trainer"]["model"][0].uri
    assert second.artifacts["latest_blessed_model_resolver"]["model"][0].uri == first_model
    assert second.inputs["Evaluator"]["baseline_model"][0].uri == first_model
    assert second.inputs["HeldoutEvaluator"]["baseline_model"][0].uri == first_model
    # The held-out figures of the blessed model, recomputed by this run, beside the candidate's.
    held_accuracy = first.heldout_metrics["sparse_categorical_accuracy"]
    assert f"(latest blessed model: {held_accuracy:.4g})" in second.text()
    side = {row["metric"]: row for row in _report_rows(second, "in_domain_vs_heldout")}
    assert float(side["sparse_categorical_accuracy"]["heldout_baseline"]) == pytest.approx(held_accuracy, abs=1e-4)
    assert f"{tfma_snr.SI_SNR_IMPROVEMENT}_diff" in second.metrics  # compared with the baseline
    assert not second.blessed and not second.pushed
    failed = {check.split(":")[0] for check in second.failed_checks}
    assert {tfma_snr.SI_SNR_IMPROVEMENT, "sparse_categorical_accuracy"} <= failed, second.failed_checks
    pushed_versions = os.listdir(config.serving_model_dir)
    assert len(pushed_versions) == 1  # still only the first model
    # Its report shows each check failed, with its value and bound, and the baseline's figures.
    checks = _report_rows(second, "blessing_checks")
    for check in checks:
        value = second.metrics[check["metric"] + ("_diff" if check["check"] == "change vs baseline" else "")]
        assert float(check["value"]) == pytest.approx(value, abs=1e-4) and check["outcome"] == "failed", check
    assert {(c["metric"], c["check"]) for c in checks} == {
        (m, kind) for m in ("sparse_categorical_accuracy", tfma_snr.SI_SNR_IMPROVEMENT)
        for kind in ("floor", "change vs baseline")}
    baseline = {row["metric"]: float(row["baseline"]) for row in _report_rows(second, "metrics")}
    assert baseline["sparse_categorical_accuracy"] == pytest.approx(accuracy, abs=1e-4)
    # With a baseline TFMA keeps plots per model: the candidate's confusion matrix is still there.
    assert sum(float(c["examples"]) for c in _report_rows(second, "confusion_matrix")) == second.split_counts["test"]


def _report_rows(run, name):
    with open(os.path.join(os.path.dirname(run.report), "data", f"{name}.csv")) as f:
        return list(csv.DictReader(f))


def _assert_report(run, screenshot):
    """The run report: printed in the summary, every section rendered in Chromium, and its
    numbers those of TFMA and the Trainer's events."""
    assert run.report and f"report: {run.report}" in run.text()
    items = assert_report_renders(run.report, os.path.join(ARTIFACTS, screenshot))
    shutil.copytree(os.path.dirname(run.report), os.path.join(ARTIFACTS, "report-e2e"), dirs_exist_ok=True)
    assert {"inputs", "examples_by_label", "rejects_by_reason", "anomalies", "window_durations", "training_curves",
            "metrics", "blessing_checks", "confusion_matrix", "recall_by_class", f"by_{features.NOISE_KIND}",
            f"by_{features.SNR_BUCKET}", "test_clips", "recording_windows", "clip_0", "recording"} <= set(items), items
    # Every test recording is a 1-s clip: the report joins several into one, so its timeline has windows.
    assert items["recording_windows"]["rows"] >= 3, items["recording_windows"]
    by_label = _report_rows(run, "examples_by_label")
    assert sum(int(row["test"]) for row in by_label) == run.split_counts["test"]
    cells = _report_rows(run, "confusion_matrix")  # TFMA's counts: they add up to its accuracy
    total = sum(float(c["examples"]) for c in cells)
    assert total == run.split_counts["test"]
    assert sum(float(c["examples"]) for c in cells if c["true"] == c["predicted"]) / total == pytest.approx(
        run.metrics["sparse_categorical_accuracy"], abs=1e-6)
    tags = {row["tag"] for row in _report_rows(run, "training_curves")}
    assert {"loss", "learning_rate", "train_accuracy", "train_si_snr_db", "eval_accuracy"} <= tags, tags
    kinds = {row["slice"] for row in _report_rows(run, f"by_{features.NOISE_KIND}")}
    assert kinds == {name.split(f"{features.NOISE_KIND}=")[1] for name in run.slice_metrics
                     if f"{features.NOISE_KIND}=" in name}
    if run.heldout_metrics:  # the generalization protocol's figures, beside the test split's
        assert {"in_domain_vs_heldout", "heldout_accuracy", f"heldout_by_{features.CHANNEL}"} <= set(items), items
        side = {row["metric"]: row for row in _report_rows(run, "in_domain_vs_heldout")}
        for metric in ("sparse_categorical_accuracy", tfma_snr.SI_SNR_IMPROVEMENT):
            assert float(side[metric]["heldout"]) == pytest.approx(run.heldout_metrics[metric], abs=1e-4)
            assert float(side[metric]["in_domain"]) == pytest.approx(run.metrics[metric], abs=1e-4)
    signals = {row["signal"] for row in _report_rows(run, "clip_0")}
    assert signals == {"noisy", "enhanced", "clean"}, signals
