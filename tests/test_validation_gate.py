"""Audio statistics at ingestion, schema bounds from the settings, and the gate on
ExampleValidator's anomalies before Transform: real TFX components on LocalDagRunner."""
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow_data_validation as tfdv

from components import features
from components.audio import stats as audio_stats
from components.config import load_config
from components.validation import schema
from pipeline import local_runner, summary
from pipeline.outcome import ExitCode
from tests.audio_helpers import tone, write_wav

RATE = features.SAMPLE_RATE
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_measure_reads_clipping_level_dc_and_silence():
    half = RATE // 2
    samples = np.concatenate([np.full(half, 1.0), np.zeros(half)]) + 0.0  # half clipped, half silent
    stats = audio_stats.measure(samples, RATE, 1)
    assert stats[features.CLIPPING_RATIO] == pytest.approx(0.5)
    assert stats[features.SILENCE_FRACTION] == pytest.approx(0.5)
    assert stats[features.DC_OFFSET] == pytest.approx(0.5)
    assert stats[features.RMS_DBFS] == pytest.approx(10 * np.log10(0.5), abs=1e-6)
    sine = tone(1.0, amplitude=0.5, rate=8000)
    stats = audio_stats.measure(np.stack([sine, sine], axis=1), 8000, 2)
    assert stats[features.CLIPPING_RATIO] == 0.0 and stats[features.SILENCE_FRACTION] == 0.0
    assert stats[features.RMS_DBFS] == pytest.approx(20 * np.log10(0.5 / np.sqrt(2)), abs=0.01)
    assert stats[features.DC_OFFSET] == pytest.approx(0.0, abs=1e-3)
    assert (stats[features.SOURCE_SAMPLE_RATE], stats[features.SOURCE_CHANNELS]) == (8000, 2)
    assert audio_stats.measure(np.zeros(RATE), RATE, 1)[features.RMS_DBFS] == -120.0
    empty = audio_stats.measure(np.zeros((0, 1)), 1000, 1)  # no sample falls in the window
    assert empty[features.SILENCE_FRACTION] == 1.0 and empty[features.RMS_DBFS] == -120.0


def test_schema_bounds_come_from_the_settings():
    config = load_config(None, ["data.segment_s=0.5", "validation.max_clipping_ratio=0.2",
                                "validation.min_sample_rate=16000"])
    curated = tfdv.load_schema_text("schemas/schema.pbtxt")
    bounded = schema.apply_bounds(curated, schema.bounds(config))
    by_name = {f.name: f for f in bounded.feature}
    assert by_name[features.CLIPPING_RATIO].float_domain.max == pytest.approx(0.2)
    assert by_name[features.DURATION_S].float_domain.max == pytest.approx(0.5, abs=0.01)
    assert by_name[features.SOURCE_SAMPLE_RATE].int_domain.min == 16000
    assert by_name[features.RMS_DBFS].float_domain.min == pytest.approx(config.validation.min_rms_dbfs)
    assert set(schema.bounds(config)) >= set(features.AUDIO_STATS)


def _corpus(root, clipped: bool):
    """6 speakers x 2 words of tones; with `clipped`, one file is a full-scale square wave."""
    for speaker in range(6):
        for word, freq in (("yes", 440.0), ("no", 660.0)):
            write_wav(str(root / word / f"s{speaker}_{word}.wav"), tone(0.5, freq + 10 * speaker))
    if clipped:
        square = np.sign(tone(0.5, 300.0, amplitude=1.0)) * 1.0
        write_wav(str(root / "yes" / "s0_square.wav"), square)
    return root


def _overrides(tmp_path, name, input_base, overrides):
    return [f"data.input_base={input_base}", f"output_dir={tmp_path / name}", "data.split_buckets={train: 1}",
            "data.segment_s=0.5", "beam_args=[--direct_num_workers=1]", *overrides]


def _validate(tmp_path, name, input_base, overrides):
    """`tfx-audio validate` in this process: (exit code, the run's summary from MLMD)."""
    config = load_config(None, _overrides(tmp_path, name, input_base, overrides))
    return local_runner.run(config, validate_only=True, verbose=True)


@pytest.mark.e2e
def test_anomalies_stop_the_run_with_exit_code_3_or_are_named_in_the_summary(tmp_path):
    clipped = _corpus(tmp_path / "clipped", clipped=True)
    # As CI runs it: a process of its own, its exit code, and all it prints (the console script
    # `tfx-audio` runs this module: test_cli.py runs the script itself).
    args = [f"--set={o}" for o in _overrides(tmp_path, "fail", clipped, ["validation.on_anomalies=fail"])]
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "validate", *args], capture_output=True,
                          text=True, cwd=REPO)
    assert done.returncode == ExitCode.ANOMALIES == 3, done.stdout + done.stderr
    # Without --verbose: one line per component (with its key counts), the summary, the error.
    assert "WavExampleGen finished in" in done.stdout and "(files in 13; rejected 0)" in done.stdout
    assert "ExampleValidator finished in" in done.stdout and "anomalies in train: clipping_ratio" in done.stdout
    assert "exit code 3 (anomalies)" in done.stdout
    assert "ExampleValidator found anomalies in the data: train: clipping_ratio" in done.stderr
    printed = (done.stdout + done.stderr).splitlines()
    assert len(printed) < 40 and not any("INFO" in line or "Warning" in line for line in printed), printed
    run = summary.latest_run(str(tmp_path / "fail" / "metadata.sqlite"), "tfx-audio")
    assert run.node_states["AnomaliesGate"] == "FAILED" and "Transform" not in run.node_states

    code, run = _validate(tmp_path, "warn", clipped, ["validation.on_anomalies=warn"])
    assert code == ExitCode.OK
    assert run.node_states["AnomaliesGate"] == "COMPLETE"
    assert list(run.anomalies) == ["train"] and any(features.CLIPPING_RATIO in a for a in run.anomalies["train"])
    assert "anomalies in train: clipping_ratio" in run.text()

    # The bound is the setting's: raised, the same data passes in fail mode.
    code, run = _validate(tmp_path, "raised", clipped, ["validation.on_anomalies=fail",
                                                        "validation.max_clipping_ratio=1.0"])
    assert code == ExitCode.OK
    assert run.node_states["AnomaliesGate"] == "COMPLETE" and run.anomalies == {}
