"""The telephone channel: what a call does to 16 kHz audio before anyone records it.

`telephone(audio)` band-limits to the narrowband telephone channel (300-3400 Hz,
sampled at 8 kHz), codes it with G.711 (mu-law or A-law, 8 bits a sample) and returns
it at 16 kHz again, the rate the pipeline reads. The held-out evaluation corpus
(pipeline/heldout_data.py) uses it as its unseen channel.

G.711 comes from the standard library's `audioop` (Python 3.10's, deprecated in 3.11):
it is the ITU codec's own segmented tables, which a companding formula only approximates.
Resampling is libsoxr's, the band edges scipy's Butterworth filters.
"""
from __future__ import annotations

import audioop  # noqa: the reference G.711 codec; this project runs on Python 3.10
from typing import Literal

import numpy as np
import scipy.signal
import soxr

from components import features

PHONE_RATE = 8000
PHONE_BAND_HZ = (300.0, 3400.0)  # ITU-T G.712's voice band
Codec = Literal["mulaw", "alaw"]
CODECS = ("mulaw", "alaw")


def _pcm16(audio: np.ndarray) -> bytes:
    return (np.clip(audio, -1.0, 1.0 - 2.0 ** -15) * 32768.0).astype("<i2").tobytes()


def g711(audio: np.ndarray, codec: Codec = "mulaw") -> np.ndarray:
    """`audio` (floats in [-1, 1]) coded to 8-bit G.711 and decoded again."""
    if codec not in CODECS:
        raise ValueError(f"codec {codec!r}: expected one of {CODECS}")
    encode, decode = (audioop.lin2ulaw, audioop.ulaw2lin) if codec == "mulaw" else (audioop.lin2alaw,
                                                                                      audioop.alaw2lin)
    coded = decode(encode(_pcm16(audio), 2), 2)
    return np.frombuffer(coded, dtype="<i2").astype(np.float32) / 32768.0


def telephone(audio: np.ndarray, codec: Codec = "mulaw") -> np.ndarray:
    """16 kHz `audio` as it comes out of a narrowband call: same length, same rate."""
    narrow = soxr.resample(audio.astype(np.float32), features.SAMPLE_RATE, PHONE_RATE, quality="HQ")
    band = scipy.signal.butter(4, PHONE_BAND_HZ, btype="bandpass", fs=PHONE_RATE, output="sos")
    narrow = scipy.signal.sosfilt(band, narrow)
    wide = soxr.resample(g711(narrow, codec), PHONE_RATE, features.SAMPLE_RATE, quality="HQ")
    out = np.zeros(len(audio), dtype=np.float32)
    out[:min(len(out), len(wide))] = wide[:len(out)]
    return out
