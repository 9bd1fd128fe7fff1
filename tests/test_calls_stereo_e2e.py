"""End to end on stereo calls (pipeline/configs/calls_stereo.yaml): each track its own stream
through the whole pipeline, sliced by role, then `tfx-audio predict --tracks split` writing a row
per track, a stereo enhanced file and calls.csv, whose figures match the generator's truth."""
import os

import pytest
import soundfile

from components import features
from components.config import load_config
from components.evaluation import tfma_recording
from pipeline import cli
from pipeline.datagen import calls as demo_calls
from pipeline.outcome import ExitCode
from tests.audio_helpers import generated_calls, read_rows
from tests.test_pipeline_e2e import _run
from tests.test_report import ARTIFACTS, assert_report_renders
from tests.test_wav_example_gen import _read_examples, _value, assert_seconds_add_up


@pytest.fixture(scope="module")
def stereo_calls(tmp_path_factory):
    return generated_calls(tmp_path_factory, stereo=True)


@pytest.mark.e2e
def test_stereo_calls_run_track_by_track_and_predict_writes_call_figures(stereo_calls, tmp_path):
    data, counts = stereo_calls
    config = load_config("pipeline/configs/calls_stereo.yaml", [
        f"data.input_base={data}", f"output_dir={tmp_path / 'out'}", "name=calls-stereo-e2e", "beam_args=[]",
        "data.split_buckets={train: 6, eval: 2, test: 2}", "trainer.epochs=3",
        # the pipeline's track-by-track path, not the shipped backbone (tests/test_bc_resnet.py), is under test
        "trainer.backbone=logmel_cnn", "evaluator.min_accuracy=0.0"])
    run = _run(config)
    assert all(state == "COMPLETE" for state in run.node_states.values()), run.node_states
    examples = run.artifacts["WavExampleGen"]["examples"][0]
    seconds = assert_seconds_add_up(examples)
    assert (run.input_files, run.rejected, run.tracks) == (counts["calls"], 0, 2 * counts["calls"])
    assert "32 tracks read" in run.text()
    assert seconds["seconds_in"] == pytest.approx(2 * counts["seconds"], abs=0.1 * counts["calls"])
    splits = _read_examples(examples.uri)
    for split in splits.values():
        for e in split:
            track, role = _value(e, features.TRACK), _value(e, features.ROLE).decode()
            assert role == config.data.track_roles[track]
            label = _value(e, features.LABEL).decode()
            assert label == "agent" if track == 0 else label in demo_calls.INTENTS
    by_split = {name: {_value(e, features.SOURCE) for e in split} for name, split in splits.items()}
    assert not (by_split["train"] & by_split["test"])  # both tracks of a call in one split
    # Sliced by role (with the denoiser's metrics on, a slice holds the examples with a clean reference);
    # per-recording accuracy per track of each test call.
    assert {"has_clean=1,role=agent", "has_clean=1,role=customer"} <= set(run.slice_metrics), sorted(run.slice_metrics)
    streams = {(_value(e, features.SOURCE), _value(e, features.TRACK)) for e in splits["test"]}
    assert run.metrics[tfma_recording.RECORDING_COUNT] == len(streams)

    # The report shows the longest test call track by track, and its test calls against the truth.
    items = assert_report_renders(run.report, os.path.join(ARTIFACTS, "report-calls-stereo.png"))
    assert {"recording_windows", "call_figures", "calls_against_truth", "recording_0", "recording_1"} <= set(items)
    windows = read_rows(os.path.join(os.path.dirname(run.report), "data", "recording_windows.csv"))
    assert {r["role"] for r in windows} == {"agent", "customer"} and all(r["speech"] for r in windows)
    against = read_rows(os.path.join(os.path.dirname(run.report), "data", "calls_against_truth.csv"))
    assert {r["call"] for r in against} == {s.decode() for s in by_split["test"]}
    assert run.calls["calls"] == len(against) and "calls (report; " in run.text()

    # predict on the clean stereo calls: the call figures match the truth within 0.5 s.
    model = os.path.join(run.artifacts["Trainer"]["model"][0].uri, "Format-Serving")
    out = tmp_path / "predicted"
    names = sorted(os.listdir(data / "clean"))[:6]
    code = cli.main(["predict", "--config", "pipeline/configs/calls_stereo.yaml", "--model", model, "--out",
                     str(out), *(str(data / "clean" / n) for n in names)])
    assert code == ExitCode.OK
    predictions = read_rows(out / "predictions.csv")
    assert [(os.path.basename(r["file"]), r["role"]) for r in predictions] == [
        (n, role) for n in names for role in ("agent", "customer")]
    windows = read_rows(out / "windows.csv")
    assert {r["role"] for r in windows} == {"agent", "customer"} and all(0 <= float(r["speech"]) <= 1 for r in windows)
    for n in names:
        assert soundfile.info(str(out / "enhanced" / n)).channels == 2
    truth = {os.path.basename(r["file_name"]): r for r in read_rows(data / demo_calls.TRUTH_FILE)}
    figures = read_rows(out / "calls.csv")
    assert [os.path.basename(r["file"]) for r in figures] == names
    for row in figures:
        want = truth[os.path.basename(row["file"])]
        for key in ("agent_talk_s", "customer_talk_s", "overtalk_s"):
            assert abs(float(row[key]) - float(want[key])) <= 0.5, (row, want)
        assert {row["agent_label"], row["customer_label"]} <= {"agent", *demo_calls.INTENTS}
