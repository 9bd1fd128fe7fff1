"""Small audio helpers for tests: synthetic tones written as WAV files, the calls demo's data, CSV rows."""
import csv
import os

import numpy as np
import soundfile

from components import features


def write_wav(path, samples, rate=features.SAMPLE_RATE, channels=1):
    """Writes float samples as a PCM16 WAV (stereo by repeating the channel)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = np.asarray(samples, dtype=np.float32)
    if channels > 1:
        data = np.stack([data] * channels, axis=1)
    soundfile.write(path, data, rate, subtype="PCM_16")


def write_pair(base, name, clean, noisy):
    """A noisy file and its clean reference in the paired layout: base/noisy/NAME, base/clean/NAME."""
    write_wav(os.path.join(base, "clean", name), clean)
    write_wav(os.path.join(base, "noisy", name), noisy)


def tone(seconds=0.5, freq=440.0, rate=features.SAMPLE_RATE, amplitude=0.3):
    t = np.arange(int(seconds * rate)) / rate
    return amplitude * np.sin(2 * np.pi * freq * t)


def read_rows(path):
    """The rows of a CSV file with a header, as dicts."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def generated_calls(tmp_path_factory, stereo=False):
    """The calls demo's generator at the end-to-end tests' size: 16 calls of 10-25 s, seed 5; returns
    (the data folder, the generator's counts)."""
    from pipeline.datagen import calls as demo_calls
    root = tmp_path_factory.mktemp("stereo_calls" if stereo else "calls")
    counts = demo_calls.generate(str(root / "audio"), str(root / "noise"), num_calls=16, min_seconds=10.0,
                                 max_seconds=25.0, seed=5, stereo=stereo)
    return root / "audio", counts

