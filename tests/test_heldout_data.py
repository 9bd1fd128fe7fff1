"""The held-out corpus: conditions outside the training's, every file described, mixed right."""
import csv
import hashlib
import os
import re
import subprocess

import numpy as np
import pytest
import soundfile

from components.audio import snr as snr_metrics
from pipeline.datagen import heldout, keywords


def test_no_held_out_voice_or_noise_kind_is_one_the_training_generates():
    families = {group.split(":")[0] for group, *_ in heldout.voices(seed=0)}
    assert families == {"flite", "espeak"}  # the keyword demo speaks through espeak-ng and Festival, never flite
    trained = {name for _, name, *_ in keywords.speakers(64, 0, keywords.VARIANTS + keywords.MORE_VARIANTS,
                                                           festival=keywords.FESTIVAL_SPEAKERS)}
    assert not trained & {name for _, name, *_ in heldout.voices(seed=0)}
    assert {n for n in trained if n.startswith("festival:")} == {f"festival:{keywords.FESTIVAL_VOICE}"}
    assert not {v.split("_")[0] for v in heldout.FLITE_VOICES} & {keywords.FESTIVAL_VOICE.split("_")[0]}
    variants = {name.split("+")[1] for group, name, *_ in heldout.voices(seed=0) if group.startswith("espeak")}
    training = {v.lower() for v in keywords.VARIANTS + keywords.MORE_VARIANTS}
    assert variants == set(heldout.HELDOUT_VARIANTS)
    # whole families: no training variant is a held-out one or one of its kin (steph2, anikaRobot...)
    assert not [t for t in training for v in variants if v.lower() in t], variants
    assert not set(heldout.HELDOUT_NOISE_KINDS) & set(keywords.NOISE_KINDS + keywords.MORE_NOISE_KINDS)


def test_the_test_part_shares_no_voice_family_with_the_training_or_the_validation_part():
    test = {name.split("+")[1].lower() for _, name, *_ in heldout.voices(seed=0, part="test")}
    assert test == {v.lower() for v in heldout.TEST_VARIANTS}
    seen = {v.lower() for v in keywords.VARIANTS + keywords.MORE_VARIANTS + heldout.HELDOUT_VARIANTS
            + heldout.FLITE_VOICES}
    assert not [(t, v) for t in test for v in seen if v in t or t in v]  # no kin either way (steph2, anikaRobot)
    groups = [group for group, *_ in heldout.voices(seed=0, part="test")]
    assert len(set(groups)) == len(heldout.TEST_VARIANTS) * len(heldout.ESPEAK_VOICES)
    assert len(groups) == heldout.TAKES * len(set(groups))


def test_the_test_part_is_its_own_corpus_and_validation_is_unchanged_by_it(tmp_path):
    val = heldout.generate(str(tmp_path / "v"), words=("yes",), voice_count=2)
    test = heldout.generate(str(tmp_path / "t"), words=("yes",), voice_count=4, part="test")
    assert test == {"files": 20, "utterances": 4, "voices": 2, "words": 1}  # two voices, two takes each
    names = {part: {row["file_name"] for row in csv.DictReader(open(tmp_path / part / "metadata.csv"))}
             for part in ("v", "t")}
    assert not names["v"] & names["t"] and val["files"] == 10
    assert all("_take" in name for name in names["t"])
    with pytest.raises(ValueError, match="part 'train'"):
        heldout.generate(str(tmp_path / "x"), part="train")


def test_every_voice_variant_either_corpus_names_is_one_espeak_ng_has():
    # espeak-ng speaks an unknown variant (say "Mr") in its default voice without a word, so a
    # misspelt name would quietly add a duplicate of another speaker.
    version = subprocess.run(["espeak-ng", "--version"], check=True, capture_output=True, text=True).stdout
    data_dir = re.search(r"Data at: (.+)", version).group(1).strip()  # where espeak-ng reads voices
    installed = set(os.listdir(os.path.join(data_dir, "voices", "!v")))
    named = set(keywords.VARIANTS + keywords.MORE_VARIANTS + heldout.HELDOUT_VARIANTS + heldout.TEST_VARIANTS)
    assert len(installed) > 50 and not named - installed, sorted(named - installed)


def test_every_eight_utterances_meet_every_noise_kind_snr_and_channel():
    seen = [c for i in range(8) for c in heldout.conditions(i)]
    assert len(set(seen)) == len(seen) == len(heldout.HELDOUT_NOISE_KINDS) * len(heldout.SNRS_DB) * len(
        heldout.CHANNELS)


def _files(root):
    return {os.path.relpath(os.path.join(d, f), root): hashlib.sha256(open(os.path.join(d, f), "rb").read()).digest()
            for d, _, names in os.walk(root) for f in names}


def test_the_corpus_lists_every_file_and_its_noisy_clips_are_at_their_snr(tmp_path):
    counts = heldout.generate(str(tmp_path / "a"), words=("yes", "stop"), voice_count=5)
    assert counts == {"files": 50, "utterances": 10, "voices": 5, "words": 2}
    with open(tmp_path / "a" / "metadata.csv") as f:
        rows = list(csv.DictReader(f))
    wavs = {name for name in _files(tmp_path / "a") if name.endswith(".wav")}
    assert sorted(r["file_name"] for r in rows) == sorted(wavs)  # every file listed, once
    assert {r["group"].split(":")[0] for r in rows} == {"flite", "espeak"}
    for row in rows:
        audio, rate = soundfile.read(tmp_path / "a" / row["file_name"], dtype="float32")
        assert rate == keywords.SR and row["label"] == row["file_name"].split("/")[0]
        spectrum = np.abs(np.fft.rfft(audio)) ** 2
        above_4k = spectrum[len(spectrum) // 2:].sum() / spectrum.sum()
        assert (above_4k < 1e-4) == (row["channel"] == "mobile"), (row["file_name"], above_4k)
        if not row["noise_kind"]:
            assert row["clean_file_name"] == "" and row["snr_db"] == ""
            continue
        clean_row = next(r for r in rows if r["file_name"] == row["clean_file_name"])
        assert clean_row["channel"] == row["channel"] and clean_row["noise_kind"] == ""
        clean = soundfile.read(tmp_path / "a" / row["clean_file_name"], dtype="float32")[0]
        if row["channel"] == "wideband":  # the codec moves the mobile clips' SNR
            # PCM16 rounding of the stored mixture moves it by far less than 0.1 dB
            assert snr_metrics.snr_db(clean, audio) == pytest.approx(float(row["snr_db"]), abs=0.1)
    # Seeded: the same arguments write the same bytes.
    heldout.generate(str(tmp_path / "b"), words=("yes", "stop"), voice_count=5)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


def test_festival_speakers_come_after_the_espeak_ones_each_with_its_own_pitch():
    import librosa

    broad = keywords.VARIANTS + keywords.MORE_VARIANTS
    plain, both = keywords.speakers(20, 5, broad), keywords.speakers(20, 5, broad, festival=3)
    assert both[:20] == plain  # the espeak-ng speakers do not move
    groups = [group for group, *_ in both[20:]]
    assert len(set(groups)) == 3 and all(g.startswith("festival:") for g in groups)
    low, high = (keywords.speak("left", f"festival:{keywords.FESTIVAL_VOICE}", 165, f0) for f0 in (90, 200))
    f0 = [np.nanmedian(librosa.pyin(a.astype(float), fmin=60, fmax=400, sr=keywords.SR)[0]) for a in (low, high)]
    assert 75 < f0[0] < 110 and 170 < f0[1] < 230, f0
    assert np.sqrt(np.mean(low ** 2)) == pytest.approx(keywords.SPEECH_RMS, rel=1e-3)
