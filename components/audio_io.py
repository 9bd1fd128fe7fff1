"""Audio decoding and encoding for ingestion: any readable file -> 16 kHz mono PCM16 WAV.

Decoding uses libsndfile (`soundfile`) and resampling uses libsoxr (`soxr`), both
well-kept libraries; nothing here parses audio by hand.
"""
from __future__ import annotations

import io

import numpy as np
import soundfile
import soxr

from components import features


class AudioError(ValueError):
    """An input file that cannot become an example; the message says why."""


def decode_to_mono_16k(data: bytes) -> np.ndarray:
    """Decodes audio bytes to float32 mono samples at 16 kHz in [-1, 1]."""
    try:
        samples, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except (RuntimeError, soundfile.LibsndfileError, TypeError) as e:
        raise AudioError(f"not a readable audio file ({e})") from e
    if samples.shape[0] == 0:
        raise AudioError("audio file has no samples")
    mono = samples.mean(axis=1)
    if not np.all(np.isfinite(mono)):
        raise AudioError("audio contains NaN or infinite samples")
    if rate != features.SAMPLE_RATE:
        mono = soxr.resample(mono, rate, features.SAMPLE_RATE, quality="HQ").astype(np.float32)
    return mono


def encode_pcm16_wav(samples: np.ndarray) -> bytes:
    """Encodes float samples in [-1, 1] as 16 kHz mono PCM16 WAV bytes."""
    buf = io.BytesIO()
    soundfile.write(buf, np.clip(samples, -1.0, 1.0), features.SAMPLE_RATE,
                    subtype="PCM_16", format="WAV")
    return buf.getvalue()
