"""Small audio helpers for tests: synthetic tones written as WAV files."""
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
