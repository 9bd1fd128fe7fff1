"""End to end: the whole TFX pipeline on LocalDagRunner with SQLite ML Metadata,
checked from MLMD and the artifacts, then a second run gated on the first."""
import os

import numpy as np
import pytest
import tensorflow as tf
from tfx import v1 as tfx

from components import features
from pipeline import summary
from pipeline.config import load_config
from pipeline.pipeline import create_pipeline
from tests.test_wav_example_gen import _read_examples, _value

NODES = {"WavExampleGen", "StatisticsGen", "ImportSchemaGen", "ExampleValidator", "Transform",
         "Trainer", "latest_blessed_model_resolver", "Evaluator", "Pusher"}
WORDS = 4
CHANCE = 1.0 / WORDS
MARGIN = 0.35  # test accuracy must beat chance (0.25) by this much: at least 0.60


def _run(config):
    tfx.orchestration.LocalDagRunner().run(create_pipeline(
        config, metadata_connection_config=tfx.orchestration.metadata.sqlite_metadata_connection_config(
            config.metadata_sqlite)))
    return summary.latest_run(config.metadata_sqlite, config.name)


@pytest.mark.e2e
def test_pipeline_trains_blesses_pushes_and_gates_the_next_run(small_demo, tmp_path):
    config = load_config("pipeline/configs/demo.yaml", [
        f"data.input_base={small_demo}", f"output_dir={tmp_path / 'out'}", "name=e2e",
        "data.split_buckets={train: 6, eval: 2, test: 2}", "trainer.epochs=20",
        "evaluator.min_accuracy=0.5", "beam_args=[]"])
    first = _run(config)

    assert set(first.node_states) == NODES
    assert all(state == "COMPLETE" for state in first.node_states.values()), first.node_states
    assert first.input_files == 192 and first.rejected == 0  # 4 words x 24 speakers x (clean + noisy)
    assert sum(first.split_counts.values()) == 192 and all(first.split_counts.values())
    accuracy = first.metrics["sparse_categorical_accuracy"]
    assert accuracy >= CHANCE + MARGIN, first.text()
    assert first.metrics["example_count"] == first.split_counts["test"]
    assert first.blessed and first.pushed
    assert tf.io.gfile.exists(os.path.join(first.pushed_destination, "saved_model.pb"))

    # No speaker group is in two splits.
    examples_uri = first.artifacts["WavExampleGen"]["examples"][0].uri
    splits = _read_examples(examples_uri)
    groups = {name: {_value(e, features.GROUP) for e in exs} for name, exs in splits.items()}
    assert not (groups["train"] & groups["eval"] or groups["train"] & groups["test"]
                or groups["eval"] & groups["test"])

    # The pushed model serves raw tf.Examples and raw WAV bytes alike.
    loaded = tf.saved_model.load(first.pushed_destination)
    test_examples = splits["test"][:8]
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

    # Second run: the resolver hands the first run's blessed model to the Evaluator as
    # its baseline, and the new model is pushed only if it is not worse.
    second = _run(config)
    assert all(state == "COMPLETE" for state in second.node_states.values()), second.node_states
    first_model = first.artifacts["Trainer"]["model"][0].uri
    assert second.artifacts["latest_blessed_model_resolver"]["model"][0].uri == first_model
    assert second.inputs["Evaluator"]["baseline_model"][0].uri == first_model
    assert "sparse_categorical_accuracy_diff" in second.metrics  # compared with the baseline
    new_accuracy = second.metrics["sparse_categorical_accuracy"]
    should_bless = new_accuracy >= 0.5 and new_accuracy >= accuracy - 1e-9
    assert second.blessed == should_bless and second.pushed == should_bless, (accuracy, new_accuracy)


@pytest.mark.e2e
def test_production_config_runs_end_to_end_with_a_tiny_wav2vec2_loaded_from_disk(small_demo, tmp_path):
    from tests.test_wav2vec2 import save_tiny_pretrained

    pretrained = save_tiny_pretrained(tmp_path / "wav2vec2-tiny")
    config = load_config("pipeline/configs/production.yaml", [
        f"data.input_base={small_demo}", f"output_dir={tmp_path / 'out'}", "name=prod",
        "data.split_buckets={train: 6, eval: 2, test: 2}", "beam_args=[]",
        f"trainer.wav2vec2.pretrained={pretrained}", "trainer.epochs=2", "trainer.batch_size=8",
        "trainer.grad_accum_steps=2", "evaluator.min_accuracy=0.0"])
    assert config.trainer.backbone == "wav2vec2" and config.trainer.learning_rate == 3e-5
    run = _run(config)
    assert all(state == "COMPLETE" for state in run.node_states.values()), run.node_states
    assert run.blessed and run.pushed  # the floor is 0 here: this proves the path, not the quality
    loaded = tf.saved_model.load(run.pushed_destination)
    splits = _read_examples(run.artifacts["WavExampleGen"]["examples"][0].uri)
    out = loaded.signatures["serve_wav"](wav=tf.constant([_value(e, features.AUDIO) for e in splits["test"][:4]]))
    assert out[features.OUT_PROBABILITIES].shape == (4, WORDS)
