"""Audio decoding and encoding for ingestion: any readable file -> 16 kHz mono PCM16 WAV.

Decoding uses libsndfile (`soundfile`) and resampling uses libsoxr (`soxr`), both
well-kept libraries; nothing here parses audio by hand.
"""
from __future__ import annotations

import io
import re
from typing import Dict, Iterator, Optional, Tuple

import numpy as np
import soundfile
import soxr
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from components import features
from components.audio import stats as audio_stats

MIN_RATE = 1000  # lower rates are broken headers, not audio (validation.min_sample_rate flags 1000-8000 Hz)


class AudioError(ValueError):
    """An input file that cannot become an example; the message says why."""


def decode_to_mono_16k(data: bytes) -> np.ndarray:
    """Decodes audio bytes to float32 mono samples at 16 kHz in [-1, 1]."""
    try:
        samples, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except (RuntimeError, soundfile.LibsndfileError, TypeError) as e:
        raise AudioError(f"not a readable audio file: {_plain(e)}") from e
    if samples.shape[0] == 0:
        raise AudioError("audio file has no samples")
    return _to_mono_16k(samples, rate)


def encode_pcm16_wav(samples: np.ndarray) -> bytes:
    """Encodes float samples in [-1, 1] as 16 kHz mono PCM16 WAV bytes."""
    buf = io.BytesIO()
    soundfile.write(buf, np.clip(samples, -1.0, 1.0), features.SAMPLE_RATE,
                    subtype="PCM_16", format="WAV")
    return buf.getvalue()


class AudioFile:
    """One audio file opened for reading windows of it, without reading it whole.

    Wraps `soundfile.SoundFile` on a Beam filesystem handle (local, gs://, ...): the
    header gives the rate, channels and length; `window` reads and converts just
    the frames asked for, so memory is bounded by the window, not by the file.

    With `track`, the file is read as that one channel (a call's agent or customer side,
    `data.tracks: split`); else its channels are averaged to mono."""

    def __init__(self, path: str, track: Optional[int] = None):
        self.path = path
        try:
            self._handle = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
        except Exception as e:  # Beam wraps every filesystem error in its own types
            raise AudioError(f"cannot open the file: {_plain(e)}") from e
        try:
            self._file = soundfile.SoundFile(self._handle)
        except (RuntimeError, soundfile.LibsndfileError, TypeError, ValueError) as e:
            self._handle.close()
            raise AudioError(f"not a readable audio file: {_plain(e)}") from e
        self.rate = int(self._file.samplerate)
        self.frames = int(self._file.frames)
        self.channels = int(self._file.channels)
        if track is not None and not 0 <= track < self.channels:
            self.close()
            raise AudioError(f"has {self.channels} channel(s); track {track} does not exist")
        self.track = track
        if self.rate < MIN_RATE:
            self.close()
            raise AudioError(f"sample rate {self.rate} Hz, below the {MIN_RATE} Hz this reads (a broken header?)")
        if self.frames <= 0:
            self.close()
            raise AudioError("audio file has no samples")

    @property
    def duration_s(self) -> float:
        return self.frames / self.rate

    def window(self, start_s: float, end_s: float, pad: bool = False) -> np.ndarray:
        """Mono float32 samples at 16 kHz of [start_s, end_s). Past the end of the data it
        raises (a truncated file), or with `pad` fills with zeros (a reference a few
        samples shorter than its noisy file)."""
        return self._to_16k(self._read(start_s, end_s, pad), start_s, end_s)

    def window_and_stats(self, start_s: float, end_s: float) -> Tuple[np.ndarray, Dict[str, float]]:
        """`window`, and the audio statistics (`audio_stats.measure`) of those samples as
        the file holds them: its own rate and channels."""
        samples = self._read(start_s, end_s, pad=False)
        mono = self._to_16k(samples, start_s, end_s)  # checks the samples are finite first
        return mono, audio_stats.measure(samples, self.rate, self.channels)

    def _read(self, start_s: float, end_s: float, pad: bool) -> np.ndarray:
        """[frames, channels] float32 samples of [start_s, end_s) at the file's rate."""
        start = int(round(start_s * self.rate))
        count = int(round(end_s * self.rate)) - start
        available = max(min(count, self.frames - start), 0)
        if available < count and not pad:
            raise AudioError(f"the header declares {self.duration_s:.2f} s but the data ends at "
                             f"{self.frames / self.rate:.2f} s (truncated file)")
        try:
            if available:
                self._file.seek(start)
            samples = self._file.read(available, dtype="float32", always_2d=True)
        except (RuntimeError, soundfile.LibsndfileError) as e:
            raise AudioError(f"unreadable at {start_s:.2f} s: {_plain(e)}") from e
        if samples.shape[0] < available and not pad:
            raise AudioError(f"the header declares {self.duration_s:.2f} s but the data ends at "
                             f"{(start + samples.shape[0]) / self.rate:.2f} s (truncated file)")
        return samples if self.track is None else samples[:, self.track:self.track + 1]

    def _to_16k(self, samples: np.ndarray, start_s: float, end_s: float) -> np.ndarray:
        want = int(round((end_s - start_s) * features.SAMPLE_RATE))
        if samples.shape[0] == 0:
            return np.zeros(want, np.float32)
        mono = _to_mono_16k(samples, self.rate)  # the resampler may round by a sample
        return mono[:want] if mono.size >= want else np.pad(mono, (0, want - mono.size))

    def blocks_16k(self, block_s: float = 10.0, every_track: bool = False) -> Iterator[np.ndarray]:
        """The whole file as consecutive 16 kHz blocks (a streaming resampler keeps the blocks
        seamless): mono (the track, or the channels' mean), or with `every_track`
        [samples, channels] blocks, each channel on its own."""
        width = self.channels if every_track else 1
        stream = None if self.rate == features.SAMPLE_RATE else soxr.ResampleStream(
            self.rate, features.SAMPLE_RATE, width, dtype="float32", quality="HQ")
        try:
            self._file.seek(0)
            for block in self._file.blocks(blocksize=int(block_s * self.rate), dtype="float32", always_2d=True):
                if every_track:
                    out = np.ascontiguousarray(block)
                else:
                    out = block[:, self.track] if self.track is not None else block.mean(axis=1)
                yield out if stream is None else stream.resample_chunk(out)
        except (RuntimeError, soundfile.LibsndfileError) as e:
            raise AudioError(f"unreadable: {_plain(e)}") from e
        if stream is not None:
            yield stream.resample_chunk(np.zeros((0, width) if every_track else 0, np.float32), last=True)

    def close(self) -> None:
        self._file.close()
        self._handle.close()

    def __enter__(self) -> "AudioFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _plain(error: Exception) -> str:
    """An error's message in plain words: libsndfile's own text, no Python reprs or paths."""
    text = getattr(error, "error_string", None) or str(error)
    return re.sub(r"<[^<>]*>", "the file", text).strip() or type(error).__name__


def _to_mono_16k(samples: np.ndarray, rate: int) -> np.ndarray:
    mono = samples.mean(axis=1)
    if not np.all(np.isfinite(mono)):
        raise AudioError("audio contains NaN or infinite samples")
    if rate != features.SAMPLE_RATE:
        mono = soxr.resample(mono, rate, features.SAMPLE_RATE, quality="HQ").astype(np.float32)
    return mono
