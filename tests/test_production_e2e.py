"""End to end with the production config: the whole TFX pipeline on LocalDagRunner with a
tiny Wav2Vec2 loaded from a local folder, as `trainer.wav2vec2.pretrained` names it. (Apart
from tests/test_pipeline_e2e.py so that parallel test workers can run the two at once.)"""
import pytest
import tensorflow as tf

from components import features
from components.config import load_config
from tests.test_pipeline_e2e import WORDS, _run
from tests.test_wav_example_gen import _read_examples, _value, assert_seconds_add_up


@pytest.mark.e2e
def test_production_config_runs_end_to_end_with_a_tiny_wav2vec2_loaded_from_disk(small_demo, tmp_path):
    from tests.test_wav2vec2 import save_tiny_pretrained

    pretrained = save_tiny_pretrained(tmp_path / "wav2vec2-tiny")
    config = load_config("pipeline/configs/production.yaml", [
        f"data.input_base={small_demo}", f"output_dir={tmp_path / 'out'}", "name=prod",
        "data.split_buckets={train: 6, eval: 2, test: 2}", "beam_args=[]",
        f"trainer.wav2vec2.pretrained={pretrained}", "trainer.epochs=2", "trainer.batch_size=8",
        "trainer.grad_accum_steps=2", "evaluator.min_accuracy=0.0",
        "features.clip_seconds=1.0", "data.min_segment_s=0.2",  # 10-s windows of 1-s keywords would be padding
        "report.enabled=false"])  # the demo run's report is tested above
    assert config.trainer.backbone == "wav2vec2" and config.trainer.learning_rate == 3e-5
    run = _run(config)
    assert all(state == "COMPLETE" for state in run.node_states.values()), run.node_states
    assert run.blessed and run.pushed  # the floor is 0 here: this proves the path, not the quality
    assert_seconds_add_up(run.artifacts["WavExampleGen"]["examples"][0])
    loaded = tf.saved_model.load(run.pushed_destination)
    splits = _read_examples(run.artifacts["WavExampleGen"]["examples"][0].uri)
    out = loaded.signatures["serve_wav"](wav=tf.constant([_value(e, features.AUDIO) for e in splits["test"][:4]]))
    assert out[features.OUT_PROBABILITIES].shape == (4, WORDS)
