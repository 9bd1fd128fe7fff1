"""The calls demo generator: files and lengths, sentence spans, stated SNRs, determinism."""
import csv
import os

import numpy as np
import pytest
import soundfile

from components.audio.snr import snr_db
from pipeline.datagen import calls as demo_calls

MIN_S, MAX_S = 10.0, 15.0
ARGS = dict(num_calls=4, min_seconds=MIN_S, max_seconds=MAX_S, seed=7)


def _read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def calls(tmp_path_factory):
    root = tmp_path_factory.mktemp("calls")
    counts = demo_calls.generate(str(root / "audio"), str(root / "noise"), **ARGS)
    return root, counts


def _tree(top):
    """{relative path: bytes} of every file under `top`."""
    out = {}
    for d, _, files in os.walk(top):
        for name in files:
            with open(os.path.join(d, name), "rb") as f:
                out[os.path.relpath(os.path.join(d, name), top)] = f.read()
    return out


def test_every_call_has_equal_length_clean_and_noisy_16k_mono_files_within_the_length_bounds(calls):
    root, counts = calls
    rows = _read_csv(root / "audio" / "metadata.csv")
    assert list(rows[0]) == ["file_name", "label", "group", "clean_file_name", "noise_kind", "snr_db"]
    assert len(rows) == counts["calls"] == ARGS["num_calls"]
    total = 0.0
    for row in rows:
        assert row["label"] == "" and row["noise_kind"] in demo_calls.NOISE_KINDS and row["group"]
        noisy = soundfile.info(str(root / "audio" / row["file_name"]))
        clean = soundfile.info(str(root / "audio" / row["clean_file_name"]))
        for info in (noisy, clean):
            assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
        assert noisy.frames == clean.frames
        # No margin over MAX_S: the generator keeps each call within its drawn target length
        # (<= max_seconds), the FFT-friendly padding included, because it reserves room for it.
        assert MIN_S <= noisy.frames / 16000 <= MAX_S
        total += noisy.frames / 16000
    assert counts["seconds"] == pytest.approx(total, abs=0.05)


def test_segments_lie_inside_their_call_do_not_overlap_and_each_covers_speech(calls):
    root, counts = calls
    segments = _read_csv(root / "audio" / "segments.csv")
    assert list(segments[0]) == ["file_name", "start_s", "end_s", "label"]
    assert len(segments) == counts["sentences"]
    for row in _read_csv(root / "audio" / "metadata.csv"):
        clean = soundfile.read(str(root / "audio" / row["clean_file_name"]), dtype="float64")[0]
        spans = sorted((float(s["start_s"]), float(s["end_s"])) for s in segments
                       if s["file_name"] == row["file_name"])
        assert spans, f"{row['file_name']} has no labelled sentence"
        in_speech = np.zeros(len(clean), bool)
        for (start, end), following in zip(spans, spans[1:] + [(len(clean) / 16000, None)]):
            assert 0.0 <= start < end <= following[0]  # inside the call, ends before the next starts
            i, j = int(round(start * 16000)), int(round(end * 16000))
            in_speech[i:j] = True
            assert np.sqrt(np.mean(clean[i:j] ** 2)) > 0.03  # sentences are spoken at RMS 0.05
        # Everything outside the spans (leading/trailing silence, pauses) is silence.
        assert np.sqrt(np.mean(clean[~in_speech] ** 2)) < 0.001


def test_labels_are_speaker_roles_and_calls_of_several_turns_have_both(calls):
    root, _ = calls
    segments = _read_csv(root / "audio" / "segments.csv")
    assert {s["label"] for s in segments} <= set(demo_calls.LABELS)
    assert len({s["label"] for s in segments}) >= 2
    for name in {s["file_name"] for s in segments}:
        labels = [s["label"] for s in segments if s["file_name"] == name]
        assert len(labels) == 1 or len(set(labels)) >= 2, name


def test_stated_snr_matches_snr_measured_from_the_stored_files(calls):
    root, _ = calls
    for row in _read_csv(root / "audio" / "metadata.csv"):
        clean = soundfile.read(str(root / "audio" / row["clean_file_name"]), dtype="float64")[0]
        noisy = soundfile.read(str(root / "audio" / row["file_name"]), dtype="float64")[0]
        assert snr_db(clean, noisy) == pytest.approx(float(row["snr_db"]), abs=0.1)


def test_same_seed_writes_byte_identical_files_and_another_seed_different_audio(calls, tmp_path):
    root, _ = calls
    demo_calls.generate(str(tmp_path / "same"), str(tmp_path / "same_noise"), **ARGS)
    first, second = _tree(root / "audio"), _tree(tmp_path / "same")
    assert len(first) == 2 * ARGS["num_calls"] + 2 and first == second
    assert _tree(root / "noise") == _tree(tmp_path / "same_noise")
    demo_calls.generate(str(tmp_path / "other"), str(tmp_path / "other_noise"), **{**ARGS, "seed": 8})
    other = _tree(tmp_path / "other")
    for name in first:
        if name.endswith(".wav"):
            assert other.get(name) != first[name], name
