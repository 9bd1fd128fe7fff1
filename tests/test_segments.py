"""Recordings of any length become window examples, labelled by file or by span, with
every second accounted; planning alone first, then through the real executor and Beam."""
import os

import numpy as np
import pytest

from components import features
from components.audio import wav_io
from components.ingest import report as ingest_report
from components.ingest import segments
from tests.audio_helpers import tone, write_pair, write_wav
from tests.test_wav_example_gen import _read_examples, _run_executor, _value


def _by_source(examples):
    out = {}
    for split in _read_examples(examples.uri).values():
        for e in split:
            out.setdefault(_value(e, features.SOURCE).decode(), []).append(e)
    return {k: sorted(v, key=lambda e: _value(e, features.OFFSET_S)) for k, v in out.items()}


def test_fixed_windows_cover_the_recording_and_a_short_tail_is_dropped_and_counted():
    plan = segments.plan(25.0, [(0.0, 25.0, "a")], None, segment_s=10.0, hop_s=10.0, min_segment_s=6.0)
    assert [(w.start_s, w.end_s, w.index) for w in plan.windows] == [(0.0, 10.0, 0), (10.0, 20.0, 1)]
    assert plan.covered_s == pytest.approx(20.0)
    assert plan.dropped_s == {segments.TOO_SHORT: pytest.approx(5.0)}


def test_overlapping_windows_count_each_second_once():
    plan = segments.plan(20.0, [(0.0, 20.0, "a")], None, segment_s=10.0, hop_s=5.0, min_segment_s=1.0)
    assert [(w.start_s, w.end_s) for w in plan.windows] == [(0.0, 10.0), (5.0, 15.0), (10.0, 20.0)]
    assert plan.covered_s == pytest.approx(20.0) and not plan.dropped_s


def test_spans_label_windows_and_gaps_are_dropped_or_background():
    spans = [(1.0, 5.0, "billing"), (8.0, 14.0, "fault")]
    dropped = segments.plan(20.0, spans, None, 2.0, 2.0, 0.5)
    assert [(w.start_s, w.end_s, w.label) for w in dropped.windows] == [
        (1.0, 3.0, "billing"), (3.0, 5.0, "billing"), (8.0, 10.0, "fault"), (10.0, 12.0, "fault"),
        (12.0, 14.0, "fault")]
    assert dropped.dropped_s == {segments.UNLABELLED: pytest.approx(10.0)}
    background = segments.plan(20.0, spans, "background", 2.0, 2.0, 0.5)
    assert [w.label for w in background.windows].count("background") == 1 + 2 + 3  # 0-1, 5-8, 14-20
    assert background.covered_s == pytest.approx(20.0) and not background.dropped_s


def test_overlapping_spans_are_refused():
    with pytest.raises(ValueError, match="overlaps the previous span"):
        segments.labelled_intervals(10.0, [(0.0, 5.0, "a"), (4.0, 6.0, "b")], None)


def test_speech_regions_merge_short_gaps_and_pad():
    flags = [False] * 10 + [True] * 10 + [False] * 2 + [True] * 5 + [False] * 20
    regions = segments.speech_regions(flags, 0.03, min_gap_s=0.1, pad_s=0.03, duration=47 * 0.03)
    assert regions == [(pytest.approx(0.27), pytest.approx(0.84))]


def test_a_long_recording_becomes_window_examples_read_window_by_window(tmp_path):
    base = tmp_path / "audio"
    rng = np.random.default_rng(1)
    signal = (np.concatenate([tone(1.0, 200 + 40 * k, rate=8000) for k in range(65)])
              + 0.01 * rng.standard_normal(65 * 8000))
    write_wav(base / "calls" / "long.wav", signal, rate=8000)  # telephone rate: resampled per window
    examples = _run_executor(base, tmp_path / "out", segment_s=10.0, min_segment_s=2.0)
    windows = _by_source(examples)["calls/long.wav"]
    assert [_value(e, features.OFFSET_S) for e in windows] == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
    assert [_value(e, features.SEGMENT_INDEX) for e in windows] == list(range(7))
    assert [round(_value(e, features.DURATION_S), 3) for e in windows] == [10.0] * 6 + [5.0]
    third = wav_io.decode_to_mono_16k(_value(windows[2], features.AUDIO))
    assert third.size == 160000
    # The window really is 20-30 s of the recording: its pitch is the 21st tone's.
    spectrum = np.abs(np.fft.rfft(third[:16000]))
    assert np.argmax(spectrum) == pytest.approx(200 + 40 * 20, abs=2)

    tail_dropped = _run_executor(base, tmp_path / "out2", segment_s=10.0, min_segment_s=6.0)
    seconds = ingest_report.read_seconds(os.path.join(tail_dropped.uri, ingest_report.REPORT_DIR))
    assert seconds["seconds_in"] == pytest.approx(65.0)
    assert seconds["seconds_in_examples"] == pytest.approx(60.0)
    assert seconds["dropped"] == {segments.TOO_SHORT: pytest.approx(5.0)}


def test_segments_csv_labels_spans_and_measures_snr_per_window(tmp_path):
    base = tmp_path / "calls"
    rng = np.random.default_rng(2)
    clean = np.zeros(20 * 16000)
    clean[16000:5 * 16000] = tone(4.0, 300)
    clean[8 * 16000:14 * 16000] = tone(6.0, 900)
    noise = 0.02 * rng.standard_normal(clean.size)
    noise[8 * 16000:14 * 16000] *= 4  # the second span is noisier: lower SNR
    write_pair(base, "call1.wav", clean, clean + noise)
    (base / "segments.csv").write_text("file_name,start_s,end_s,label\n"
                                       "noisy/call1.wav,1.0,5.0,billing\nnoisy/call1.wav,8.0,14.0,fault\n")
    (base / "metadata.csv").write_text("file_name,label,group,clean_file_name,noise_kind,snr_db\n"
                                       "noisy/call1.wav,,caller1,clean/call1.wav,pink,12.0\n")
    examples = _run_executor(base, tmp_path / "out", file_pattern="noisy/*.wav", segment_s=2.0)
    windows = _by_source(examples)["noisy/call1.wav"]
    assert [(_value(e, features.OFFSET_S), _value(e, features.LABEL)) for e in windows] == [
        (1.0, b"billing"), (3.0, b"billing"), (8.0, b"fault"), (10.0, b"fault"), (12.0, b"fault")]
    snrs = [_value(e, features.SNR_DB) for e in windows]
    assert min(snrs[:2]) > max(snrs[2:]) + 6  # measured on each window, not the file's 12.0
    seconds = ingest_report.read_seconds(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    assert seconds["dropped"] == {segments.UNLABELLED: pytest.approx(10.0)}

    background = _run_executor(base, tmp_path / "out_bg", file_pattern="noisy/*.wav", segment_s=2.0,
                               unlabelled_spans="background")
    labels = [_value(e, features.LABEL) for e in _by_source(background)["noisy/call1.wav"]]
    assert labels.count(b"background") == 6 and len(labels) == 11


def test_voice_activity_detection_keeps_speech_and_counts_the_silence(tmp_path):
    from pipeline.datagen import keywords

    speech = keywords.speak("please check the invoice for the last order", "en-us", 160, 50)
    gap = np.zeros(3 * 16000, np.float32)
    base = tmp_path / "audio"
    write_wav(base / "talk" / "a.wav", np.concatenate([gap, speech, gap, speech, gap]))
    examples = _run_executor(base, tmp_path / "out", segment_s=1.0, segmentation="vad")
    seconds = ingest_report.read_seconds(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    silence = 9.0
    assert seconds["dropped"][segments.NO_SPEECH] == pytest.approx(silence, abs=0.8)  # pads, VAD frames
    for e in _by_source(examples)["talk/a.wav"]:
        start = _value(e, features.OFFSET_S)
        in_first = 3.0 - 0.2 <= start <= 3.0 + speech.size / 16000
        in_second = 6.0 + speech.size / 16000 - 0.2 <= start <= 6.0 + 2 * speech.size / 16000
        assert in_first or in_second, f"window at {start} s lies in the silence"


def test_a_recording_over_max_duration_or_without_any_window_is_rejected_with_its_seconds(tmp_path):
    base = tmp_path / "audio"
    write_wav(base / "a" / "ok.wav", tone(2.0))
    write_wav(base / "a" / "long.wav", tone(6.0))
    write_wav(base / "a" / "blip.wav", tone(0.1))
    examples = _run_executor(base, tmp_path / "out", max_duration_s=5.0, min_segment_s=0.5,
                             max_reject_fraction=1.0)
    _, rejects = ingest_report.read_report(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    reasons = {r["source"]: (r["reason"], r["seconds"]) for r in rejects}
    assert reasons["a/long.wav"] == ("6.0 s long, over the 5.0 s limit (data.max_duration_s)", 6.0)
    assert reasons["a/blip.wav"][0].startswith("no example in it: 0.10 s shorter than data.min_segment_s")
    seconds = ingest_report.read_seconds(os.path.join(examples.uri, ingest_report.REPORT_DIR))
    assert seconds["seconds_rejected"] == pytest.approx(6.1)
    assert seconds["seconds_in"] == pytest.approx(8.1)


def test_a_window_longer_than_the_model_window_is_refused_by_the_config():
    from components.config import load_config

    with pytest.raises(ValueError, match="longer than the model's window .* would be cropped"):
        load_config(None, ["data.segment_s=2.0", "features.clip_seconds=1.0"])
