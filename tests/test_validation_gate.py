"""Audio statistics at ingestion, schema bounds from the settings, and the gate on
ExampleValidator's anomalies before Transform: real TFX components on LocalDagRunner."""
import numpy as np
import pytest
import tensorflow_data_validation as tfdv
from tfx import v1 as tfx

from components import audio_stats, features, schema
from components.config import load_config
from pipeline import summary
from pipeline.pipeline import validated_data
from tests.audio_helpers import tone, write_wav

RATE = features.SAMPLE_RATE


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


def _run(tmp_path, name, input_base, overrides):
    config = load_config(None, [f"data.input_base={input_base}", f"output_dir={tmp_path / name}",
                                "data.split_buckets={train: 1}", "data.segment_s=0.5",
                                "beam_args=[--direct_num_workers=1]", *overrides])
    nodes = validated_data(config)
    tfx.orchestration.LocalDagRunner().run(tfx.dsl.Pipeline(
        pipeline_name=config.name, pipeline_root=config.pipeline_root, components=nodes.components(),
        metadata_connection_config=tfx.orchestration.metadata.sqlite_metadata_connection_config(
            config.metadata_sqlite), beam_pipeline_args=config.beam_args))
    return config


@pytest.mark.e2e
def test_anomalies_stop_the_run_or_are_named_in_the_summary(tmp_path):
    clipped = _corpus(tmp_path / "clipped", clipped=True)
    with pytest.raises(RuntimeError, match=r"clipping_ratio"):
        _run(tmp_path, "fail", clipped, ["validation.on_anomalies=fail"])

    config = _run(tmp_path, "warn", clipped, ["validation.on_anomalies=warn"])
    run = summary.latest_run(config.metadata_sqlite, config.name)
    assert run.node_states["AnomaliesGate"] == "COMPLETE"
    assert list(run.anomalies) == ["train"] and any(features.CLIPPING_RATIO in a for a in run.anomalies["train"])
    assert "anomalies in train: clipping_ratio" in run.text()

    # The bound is the setting's: raised, the same data passes in fail mode.
    config = _run(tmp_path, "raised", clipped, ["validation.on_anomalies=fail",
                                                "validation.max_clipping_ratio=1.0"])
    run = summary.latest_run(config.metadata_sqlite, config.name)
    assert run.node_states["AnomaliesGate"] == "COMPLETE" and run.anomalies == {}
