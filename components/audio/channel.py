"""Call channels: what a call does to 16 kHz audio before anyone records it.

`telephone(audio)` band-limits to the narrowband telephone channel (300-3400 Hz,
sampled at 8 kHz), codes it with G.711 (mu-law or A-law, 8 bits a sample) and returns
it at 16 kHz again, the rate the pipeline reads. `mobile(audio)` is a mobile call: the
same band, coded with AMR-NB (3GPP's narrowband speech codec, 4.75-12.2 kbit/s) by sox
(libopencore-amrnb, Debian's libsox-fmt-base). The held-out evaluation corpus
(pipeline/datagen/heldout.py) uses the mobile channel as its unseen channel.

G.711 comes from the standard library's `audioop` (Python 3.10's, deprecated in 3.11):
it is the ITU codec's own segmented tables, which a companding formula only approximates.
Resampling is libsoxr's, the band edges scipy's Butterworth filters.
"""
from __future__ import annotations

import audioop  # the reference G.711 codec; this project runs on Python 3.10
import os
import subprocess
import tempfile
import typing
from typing import Literal

import numpy as np
import scipy.signal
import soxr

from components import features

PHONE_RATE = 8000
PHONE_BAND_HZ = (300.0, 3400.0)  # ITU-T G.712's voice band
Codec = Literal["mulaw", "alaw"]
CODECS = typing.get_args(Codec)
AMR_NB_KBPS = (4.75, 5.15, 5.9, 6.7, 7.4, 7.95, 10.2, 12.2)  # AMR-NB's modes 0-7, sox's -C
AMR_NB_DELAY = 40  # samples at 8 kHz (5 ms) the decoded audio lags; measured, the same at every mode


def _pcm16(audio: np.ndarray) -> bytes:
    return (np.clip(audio, -1.0, 1.0 - 2.0 ** -15) * 32768.0).astype("<i2").tobytes()


def _fit(audio: np.ndarray, n: int) -> np.ndarray:
    """`audio` cut or zero-padded to n samples, float32."""
    out = np.zeros(n, dtype=np.float32)
    out[:min(n, len(audio))] = audio[:n]
    return out


def g711(audio: np.ndarray, codec: Codec = "mulaw") -> np.ndarray:
    """`audio` (floats in [-1, 1]) coded to 8-bit G.711 and decoded again."""
    if codec not in CODECS:
        raise ValueError(f"codec {codec!r}: expected one of {CODECS}")
    encode, decode = (audioop.lin2ulaw, audioop.ulaw2lin) if codec == "mulaw" else (audioop.lin2alaw,
                                                                                      audioop.alaw2lin)
    coded = decode(encode(_pcm16(audio), 2), 2)
    return np.frombuffer(coded, dtype="<i2").astype(np.float32) / 32768.0


def amr_nb(audio: np.ndarray, mode: int = 7) -> np.ndarray:
    """8 kHz `audio` coded to AMR-NB at AMR_NB_KBPS[mode] and decoded again (sox)."""
    if not 0 <= mode < len(AMR_NB_KBPS):
        raise ValueError(f"AMR-NB mode {mode}: expected 0-{len(AMR_NB_KBPS) - 1}")
    with tempfile.TemporaryDirectory() as tmp:
        raw, coded, back = (os.path.join(tmp, name) for name in ("in.s16", "coded.amr-nb", "out.s16"))
        with open(raw, "wb") as f:
            f.write(_pcm16(audio))
        pcm = ["-t", "raw", "-r", str(PHONE_RATE), "-e", "signed", "-b", "16", "-c", "1"]
        subprocess.run(["sox", *pcm, raw, "-C", str(mode), coded], check=True, capture_output=True)
        subprocess.run(["sox", coded, *pcm, back], check=True, capture_output=True)
        with open(back, "rb") as f:
            decoded = np.frombuffer(f.read(), dtype="<i2").astype(np.float32) / 32768.0
    # Aligned with the input, so a clip and its reference line up; the codec works in 20-ms
    # frames: cut to the input's length again.
    return _fit(decoded[AMR_NB_DELAY:], len(audio))


def _narrowband(audio: np.ndarray, code) -> np.ndarray:
    """16 kHz audio down to the 8 kHz voice band, through `code`, and back: same length."""
    narrow = soxr.resample(audio.astype(np.float32), features.SAMPLE_RATE, PHONE_RATE, quality="HQ")
    band = scipy.signal.butter(4, PHONE_BAND_HZ, btype="bandpass", fs=PHONE_RATE, output="sos")
    wide = soxr.resample(code(scipy.signal.sosfilt(band, narrow)), PHONE_RATE, features.SAMPLE_RATE, quality="HQ")
    return _fit(wide, len(audio))


def telephone(audio: np.ndarray, codec: Codec = "mulaw") -> np.ndarray:
    """16 kHz `audio` as it comes out of a narrowband G.711 call: same length, same rate."""
    return _narrowband(audio, lambda narrow: g711(narrow, codec))


def mobile(audio: np.ndarray, mode: int = 7) -> np.ndarray:
    """16 kHz `audio` as it comes out of an AMR-NB mobile call (mode: AMR_NB_KBPS's index)."""
    return _narrowband(audio, lambda narrow: amr_nb(narrow, mode))
