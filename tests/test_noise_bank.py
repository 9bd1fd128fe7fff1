"""The pretrained denoiser's training noise bank (pipeline/datagen/noise_bank.py): the recorded noise
kept as it is, generated kinds and real-speech babble beside it, in the layout the noise mixers read,
the same files every time."""
import os

import numpy as np
import soundfile

from components.ingest.noise_mix import load_noise
from pipeline.datagen import noise_bank
from tests.audio_helpers import tone, write_wav


def _inputs(base):
    write_wav(os.path.join(base, "noise", "traffic", "a.wav"), tone(1.0, 200.0))
    for speaker in ("s1", "s2"):
        for i in range(2):
            write_wav(os.path.join(base, "speech", speaker, f"{i}.wav"), tone(0.7, 300.0 + 50 * i))
    return os.path.join(base, "noise"), os.path.join(base, "speech")


def test_the_bank_holds_the_recorded_noise_and_each_generated_kind_in_the_mixers_layout(tmp_path):
    real_noise, speech = _inputs(tmp_path)
    out = str(tmp_path / "bank")
    counts = noise_bank.write(real_noise, speech, out, files=2, seconds=1.5)
    kinds = {"traffic", "babble", *(f"gen_{k}" for k in noise_bank.GENERATED_KINDS)}
    assert counts == {k: 1 if k == "traffic" else 2 for k in kinds}
    loaded = load_noise(out)
    assert set(loaded) == kinds
    np.testing.assert_allclose(loaded["traffic"][0], soundfile.read(os.path.join(real_noise, "traffic", "a.wav"))[0],
                               atol=1e-4)
    for kind in kinds - {"traffic"}:
        assert [len(a) for a in loaded[kind]] == [24000, 24000]
        assert not np.array_equal(*loaded[kind])  # each file its own realization
    # babble is the talkers' recordings summed: its strongest frequency is one of their tones
    spectrum = np.abs(np.fft.rfft(loaded["babble"][0]))
    peak_hz = np.argmax(spectrum) * 16000 / len(loaded["babble"][0])
    assert min(abs(peak_hz - 300.0), abs(peak_hz - 350.0)) < 2.0


def test_the_same_arguments_write_the_same_files(tmp_path):
    real_noise, speech = _inputs(tmp_path)
    first, second = (noise_bank.write(real_noise, speech, str(tmp_path / name), 1, 1.0) and
                     load_noise(str(tmp_path / name)) for name in ("one", "two"))
    for kind in first:
        np.testing.assert_array_equal(first[kind][0], second[kind][0])
