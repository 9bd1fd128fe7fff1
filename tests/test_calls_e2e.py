"""End to end on long recordings: the calls demo (generated calls with intents annotated
as spans) through the whole pipeline, every second accounted, then the pushed model
over whole recordings: per-window labels and an aggregate, the denoiser in chunks."""
import csv
import os
import shutil

import numpy as np
import pytest
import soundfile

from components import features
from components.audio.snr import improvement_db, si_snr_db
from components.config import load_config
from components.evaluation import tfma_recording, tfma_snr
from components.serving.recording import RecordingModel
from pipeline import cli
from pipeline.datagen import calls as demo_calls
from pipeline.outcome import ExitCode
from tests.audio_helpers import generated_calls
from tests.test_pipeline_e2e import NODES, _run
from tests.test_wav_example_gen import _read_examples, _value, assert_seconds_add_up


@pytest.fixture(scope="module")
def calls(tmp_path_factory):
    return generated_calls(tmp_path_factory)


@pytest.mark.e2e
def test_calls_demo_runs_end_to_end_and_serves_whole_recordings(calls, tmp_path):
    data, counts = calls
    config = load_config("pipeline/configs/calls.yaml", [
        f"data.input_base={data}", f"output_dir={tmp_path / 'out'}", "name=calls-e2e", "beam_args=[]",
        "data.split_buckets={train: 6, eval: 2, test: 2}", "trainer.epochs=12",
        "evaluator.min_accuracy=0.0", "evaluator.min_si_snr_improvement_db=null",
        "report.enabled=false"])  # the report is tested on the demo's run
    run = _run(config)
    assert set(run.node_states) == NODES
    assert all(state == "COMPLETE" for state in run.node_states.values()), run.node_states

    # Every second of the calls is accounted, in the summary as in the report.
    examples = run.artifacts["WavExampleGen"]["examples"][0]
    seconds = assert_seconds_add_up(examples)
    assert run.input_files == counts["calls"] and run.rejected == 0
    assert seconds["seconds_in"] == pytest.approx(counts["seconds"], abs=0.1 * counts["calls"])
    assert run.seconds["seconds_in"] == pytest.approx(seconds["seconds_in"], abs=1e-2)
    assert set(seconds["dropped"]) <= {"unlabelled (no span in segments.csv covers it)",
                                       "shorter than data.min_segment_s (a tail or a short span)"}
    assert "seconds: in " in run.text() and "unlabelled" in run.text()
    # Windows of at most the model's window, labelled by the spans they lie in.
    splits = _read_examples(examples.uri)
    windows = [e for split in splits.values() for e in split]
    assert max(_value(e, features.DURATION_S) for e in windows) <= config.features.clip_seconds + 1e-6
    assert {_value(e, features.LABEL).decode() for e in windows} == set(demo_calls.LABELS)

    # Per-recording accuracy beside the window metrics, one recording per test call.
    test_calls = {_value(e, features.SOURCE) for e in splits["test"]}
    assert run.metrics[tfma_recording.RECORDING_COUNT] == len(test_calls)
    assert 0.0 <= run.metrics[tfma_recording.RECORDING_ACCURACY] <= 1.0
    # The denoiser works on calls: 4.1 dB measured on this data (2026-11-30); half of it at least.
    assert run.metrics[tfma_snr.SI_SNR_IMPROVEMENT] >= 2.0, run.text()
    assert run.blessed and run.pushed

    # The pushed model over a whole test call: windows every hop, an aggregate label;
    # the denoiser streams the call in chunks and returns all of it, cleaner.
    model = RecordingModel(run.pushed_destination)
    assert model.window_samples == config.features.num_samples and sorted(model.labels) == sorted(demo_calls.LABELS)
    source = sorted(test_calls)[0].decode()
    noisy_path = os.path.join(data, source)
    result = model.classify(noisy_path, hop_s=1.0)
    duration = soundfile.info(noisy_path).duration
    assert result.starts_s[0] == 0.0 and result.ends_s[-1] == pytest.approx(duration, abs=1e-3)
    assert np.allclose(np.diff(result.starts_s), 1.0)
    assert result.probabilities.shape == (len(result.starts_s), 2) and result.label in demo_calls.LABELS
    np.testing.assert_allclose(result.probabilities.sum(axis=1), 1.0, rtol=1e-5)
    out_path = str(tmp_path / "enhanced.wav")
    assert model.denoise(noisy_path, out_path, chunk_s=4.0, overlap_s=0.5) == pytest.approx(duration, abs=1e-3)
    enhanced = soundfile.read(out_path, dtype="float32")[0]
    noisy = soundfile.read(noisy_path, dtype="float32")[0]
    clean = soundfile.read(os.path.join(data, source.replace("noisy/", "clean/")), dtype="float32")[0]
    assert enhanced.shape == noisy.shape
    assert improvement_db(si_snr_db, clean, noisy, enhanced) > 0.0

    # tfx-audio predict over a folder, with the newest pushed model by default: every file ends
    # up in predictions.csv (with its windows and enhanced audio) or in rejects.csv.
    folder = tmp_path / "to_predict"
    folder.mkdir()
    picked = sorted(test_calls)[:2]
    for name in picked:
        shutil.copy(os.path.join(data, name.decode()), folder / os.path.basename(name.decode()))
    (folder / "broken.wav").write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt not a wav at all")
    out = tmp_path / "predictions"
    code = cli.main(["predict", "--config", "pipeline/configs/calls.yaml", "--set", f"output_dir={config.output_dir}",
                     str(folder), "--out", str(out)])
    assert code == ExitCode.FAILED  # one file could not be read: listed, and the exit code says so
    with open(out / "predictions.csv") as f:
        predicted = list(csv.DictReader(f))
    with open(out / "rejects.csv") as f:
        rejects = list(csv.DictReader(f))
    with open(out / "windows.csv") as f:
        windows_rows = list(csv.DictReader(f))
    assert sorted(os.path.basename(row["file"]) for row in predicted) == sorted(
        os.path.basename(name.decode()) for name in picked)
    assert [os.path.basename(row["file"]) for row in rejects] == ["broken.wav"] and rejects[0]["reason"]
    for row in predicted:
        assert row["label"] in demo_calls.LABELS
        assert sum(float(row[label]) for label in demo_calls.LABELS) == pytest.approx(1.0, abs=1e-4)
        enhanced_path = out / "enhanced" / os.path.basename(row["file"])
        assert soundfile.info(str(enhanced_path)).duration == pytest.approx(float(row["duration_s"]), abs=1e-3)
    assert len(windows_rows) == sum(int(row["windows"]) for row in predicted)
