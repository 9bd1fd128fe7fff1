"""Whole-recording inference: a recording of any length through an exported model.

The classifier runs over windows of the model's length (`hop_s` apart) and gives
per-window labels, probabilities and times, and an aggregate label for the
recording (the mean of the window probabilities, weighted by window length).
The denoiser enhances the recording in chunks of `chunk_s`, crossfaded over
`overlap_s` with complementary raised-cosine windows (overlap-add).

The file is read window by window or block by block (soundfile) and the enhanced
audio written block by block, so memory is bounded by a chunk, not by the
recording. That is also why this is a client of the SavedModel's window and
chunk signatures (`serve_wav`, `denoise_chunk`) rather than one signature taking
a whole recording: a single request holding an hour of audio (115 MB of PCM16)
grows with the recording and exceeds TF Serving's default 4 MB gRPC messages.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import soundfile
import tensorflow as tf

from components import features
from components.audio import vad, wav_io
from components.ingest.segments import SILENT
from components.serving.calls import CallActivity, CallFigures

Enhance = Callable[[np.ndarray, float, float], np.ndarray]  # (chunk, mean, std) -> enhanced chunk


@dataclasses.dataclass
class RecordingResult:
    source: str
    duration_s: float
    starts_s: List[float]
    ends_s: List[float]
    window_labels: List[str]
    probabilities: np.ndarray  # [windows, classes]
    labels: Sequence[str]  # the class names, in probability order
    label: str  # the recording's aggregate label
    mean_probabilities: np.ndarray  # [classes], weighted by window length

    def rows(self) -> Iterator[dict]:
        """One dict a window: start_s, end_s, label, and a probability per class."""
        for i, (start, end) in enumerate(zip(self.starts_s, self.ends_s)):
            yield {"start_s": round(start, 3), "end_s": round(end, 3), "label": self.window_labels[i],
                   **{name: float(p) for name, p in zip(self.labels, self.probabilities[i])}}


@dataclasses.dataclass
class WindowResult:
    start_s: float
    end_s: float
    label: str
    probabilities: np.ndarray  # [classes]
    speech: Optional[float] = None  # the share of the window's frames the voice-activity detector calls speech
    heard: bool = True  # False: every sample of the window is zero


class Aggregate:
    """The recording's label from its windows: the mean of their probabilities, weighted by length,
    and by speech share where the windows have one (a track of a call: the windows where its side
    speaks, not those holding the other side's crosstalk or silence). A running sum: memory of one
    window."""

    def __init__(self):
        self._sums = {False: [None, 0.0], True: [None, 0.0]}  # by length alone; by length x speech share

    def add(self, window: WindowResult) -> None:
        length = window.end_s - window.start_s
        for by_speech, entry in self._sums.items():
            weight = length * (window.speech or 0.0) if by_speech else length
            part = window.probabilities * weight
            entry[0] = part if entry[0] is None else entry[0] + part
            entry[1] += weight

    def mean(self) -> np.ndarray:
        total, weight = self._sums[True]
        if weight <= 0:  # no speech share known, or none heard: by length
            total, weight = self._sums[False]
        return total / weight

    def label(self, labels: Sequence[str], ruled_out: Sequence[str] = ()) -> str:
        """The most probable of `labels` on the mean, leaving out `ruled_out` (on a call's track: the
        names of the other tracks' roles, which this track's side cannot be, e.g. `agent` on the
        customer's track, where only crosstalk or a confusion puts it) unless they are all there is."""
        mean = self.mean()
        allowed = [i for i, name in enumerate(labels) if name not in set(ruled_out)] or range(len(labels))
        return labels[max(allowed, key=lambda i: mean[i])]


def window_starts(duration_s: float, window_s: float, hop_s: float,
                  min_window_s: float = 0.0) -> List[Tuple[float, float]]:
    """Windows of window_s every hop_s covering [0, duration_s); the last one may be shorter,
    and is left out under min_window_s (unless it is the only one)."""
    if not 0 < hop_s <= window_s:
        raise ValueError(f"need 0 < hop_s ({hop_s}) <= the model's window ({window_s} s)")
    out, start = [], 0.0
    while True:
        end = min(start + window_s, duration_s)
        if not out or end - start >= min_window_s:
            out.append((start, end))
        if end >= duration_s - 1e-9:
            return out
        start += hop_s


def crossfade(overlap: int) -> np.ndarray:
    """Fade-in weights w of length `overlap` with w + w[::-1] = 1 (raised cosine)."""
    return np.sin(0.5 * np.pi * (np.arange(overlap) + 0.5) / overlap) ** 2 if overlap else np.zeros(0)


def _level(audio: wav_io.AudioFile, every_track: bool = False) -> Tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of the whole recording (of each track, with `every_track`), one
    pass over its blocks (the normalization the one-shot `denoise_wav` applies)."""
    count, total, squares = 0, 0.0, 0.0
    for block in audio.blocks_16k(every_track=every_track):
        count += block.shape[0]
        total = total + np.sum(block, axis=0, dtype=np.float64)
        squares = squares + np.sum(np.square(block, dtype=np.float64), axis=0)
    mean = np.asarray(total) / max(count, 1)
    return mean, np.sqrt(np.maximum(np.asarray(squares) / max(count, 1) - mean * mean, 0.0) + 1e-8)


def _chunks(blocks: Iterator[np.ndarray], length: int, hop: int) -> Iterator[Tuple[np.ndarray, bool]]:
    """(chunk, is_last): chunks of `length` samples every `hop` samples from a stream of
    blocks ([samples] or [samples, tracks]), the last one shorter; a chunk is passed on only once
    data beyond it has come, so the last one always reaches past the previous one's overlap. Holds
    at most one chunk plus one block."""
    buffer = None
    for block in blocks:
        buffer = block if buffer is None else np.concatenate([buffer, block])
        while buffer.shape[0] > length:
            yield buffer[:length], False
            buffer = buffer[hop:]
    yield buffer, True


def denoise_file(in_path: str, out_path: str, enhance: Enhance, chunk_s: float = 10.0,
                 overlap_s: float = 1.0, every_track: bool = False,
                 on_block: Optional[Callable[[np.ndarray], None]] = None) -> float:
    """Enhances `in_path` into `out_path` (16 kHz PCM16 WAV: mono, or with `every_track` each
    channel enhanced on its own into a file of as many channels) chunk by chunk with overlap-add;
    `on_block` sees every block written ([samples, tracks] with `every_track`); returns the seconds
    written."""
    length = int(round(chunk_s * features.SAMPLE_RATE))
    overlap = int(round(overlap_s * features.SAMPLE_RATE))
    if not 0 <= overlap < length:
        raise ValueError(f"need 0 <= overlap_s ({overlap_s}) < chunk_s ({chunk_s})")
    fade_in = crossfade(overlap)
    written = 0
    with wav_io.AudioFile(in_path) as audio:
        width = audio.channels if every_track else 1
        if every_track:
            fade_in = fade_in[:, None]
        with soundfile.SoundFile(out_path, "w", features.SAMPLE_RATE, width, subtype="PCM_16",
                                 format="WAV") as out:
            mean, std = _level(audio, every_track)
            tail = None  # the previous chunk's faded-out overlap
            for chunk, last in _chunks(audio.blocks_16k(every_track=every_track), length, length - overlap):
                if every_track:
                    enhanced = np.stack([np.asarray(enhance(chunk[:, t], float(mean[t]), float(std[t])), np.float32)
                                         for t in range(width)], axis=1)
                else:
                    enhanced = np.array(enhance(chunk, float(mean), float(std)), np.float32)
                if tail is not None:  # the previous chunk's overlap, faded out, plus this one's, faded in
                    enhanced[:overlap] = enhanced[:overlap] * fade_in + tail
                if not last:  # the overlap is finished by the next chunk
                    tail = enhanced[length - overlap:] * fade_in[::-1]
                    enhanced = enhanced[:length - overlap]
                enhanced = np.clip(enhanced, -1.0, 1.0)
                out.write(enhanced)
                if on_block is not None:
                    on_block(enhanced)
                written += enhanced.shape[0]
    return written / features.SAMPLE_RATE


class RecordingModel:
    """An exported tfx-audio SavedModel applied to whole recordings."""

    def __init__(self, model_dir: str):
        self._model = tf.saved_model.load(model_dir)
        if not hasattr(self._model, "window_samples"):
            raise ValueError(f"{model_dir} was exported before whole-recording inference existed "
                             f"(no window_samples): retrain it with this version")
        self.window_samples = int(self._model.window_samples.numpy())
        self.labels = [v.decode() for v in self._model.label_names.numpy()]
        self._serve_wav = self._model.signatures["serve_wav"]
        self._denoise_chunk = self._model.signatures.get("denoise_chunk")

    @property
    def denoises(self) -> bool:
        return self._denoise_chunk is not None

    def serve_wav(self, wavs: Sequence[bytes]) -> Dict[str, tf.Tensor]:
        """The `serve_wav` signature on a batch of WAV windows: probabilities, label (and enhanced_wav)."""
        return self._serve_wav(wav=tf.constant(list(wavs)))

    def enhance(self, chunk: np.ndarray, mean: float, std: float) -> np.ndarray:
        out = self._denoise_chunk(waveform=tf.constant(chunk, tf.float32), mean=tf.constant(mean, tf.float32),
                                  std=tf.constant(std, tf.float32))
        return out[features.OUT_ENHANCED].numpy()

    def windows(self, path: str, track: Optional[int] = None, hop_s: Optional[float] = None, batch_size: int = 16,
                min_window_s: float = 0.2, max_duration_s: float = float("inf"),
                vad_aggressiveness: Optional[int] = None, refuse_silent: bool = True) -> Iterator[WindowResult]:
        """Each window's label and probabilities, in order, as they are computed (of one track, with
        `track`); with `vad_aggressiveness`, each window's speech share by the ExampleGen's detector. A
        last window under min_window_s is left out (as the ExampleGen's data.min_segment_s), and a
        recording shorter than that, longer than max_duration_s, or digitally silent throughout, is
        refused (wav_io.AudioError, the last at the end), as the ExampleGen does (NaN samples too:
        `audio.window` raises)."""
        window_s = self.window_samples / features.SAMPLE_RATE
        hop_s = hop_s or window_s
        heard = False
        with wav_io.AudioFile(path, track) as audio:
            if audio.duration_s < min_window_s:
                raise wav_io.AudioError(f"{audio.duration_s:.3f} s long, shorter than data.min_segment_s "
                                        f"({min_window_s:g} s): too short to label")
            if audio.duration_s > max_duration_s:  # the ExampleGen's words
                raise wav_io.AudioError(f"{audio.duration_s:.1f} s long, over the {max_duration_s} s limit "
                                        f"(data.max_duration_s)")
            spans = window_starts(audio.duration_s, window_s, hop_s, min_window_s)
            for i in range(0, len(spans), batch_size):
                batch = spans[i:i + batch_size]
                samples = [audio.window(s, e) for s, e in batch]
                heard = heard or any(np.any(w) for w in samples)
                out = self.serve_wav([wav_io.encode_pcm16_wav(w) for w in samples])
                probabilities = out[features.OUT_PROBABILITIES].numpy()
                names = [v.decode() for v in out[features.OUT_LABEL].numpy()]
                for k, (start, end) in enumerate(batch):
                    speech = None if vad_aggressiveness is None else vad.speech_share(samples[k], vad_aggressiveness)
                    yield WindowResult(start, end, names[k], probabilities[k], speech, bool(np.any(samples[k])))
        if not heard and refuse_silent:  # (a call's muted side is kept: `refuse_silent` False)
            raise wav_io.AudioError(SILENT)

    def classify(self, path: str, hop_s: Optional[float] = None, batch_size: int = 16,
                 min_window_s: float = 0.2, max_duration_s: float = float("inf"),
                 track: Optional[int] = None) -> RecordingResult:
        """Per-window labels and probabilities over the whole recording, and its aggregate
        (`windows`, gathered)."""
        starts, ends, probabilities, names = [], [], [], []
        aggregate = Aggregate()
        for window in self.windows(path, track, hop_s, batch_size, min_window_s, max_duration_s):
            starts.append(window.start_s)
            ends.append(window.end_s)
            names.append(window.label)
            probabilities.append(window.probabilities)
            aggregate.add(window)
        with wav_io.AudioFile(path) as audio:
            duration = audio.duration_s
        mean = aggregate.mean()
        return RecordingResult(path, duration, starts, ends, names, np.stack(probabilities), self.labels,
                               self.labels[int(np.argmax(mean))], mean)

    def denoise_tracks(self, in_path: str, out_path: str, on_block: Optional[Callable[[np.ndarray], None]] = None,
                       chunk_s: float = 10.0, overlap_s: float = 1.0) -> float:
        """Each channel of `in_path` denoised on its own into a file of as many channels."""
        if not self.denoises:
            raise ValueError("this model has no denoiser (trainer.denoiser.enabled was false)")
        return denoise_file(in_path, out_path, self.enhance, chunk_s, overlap_s, every_track=True, on_block=on_block)

    def call_figures(self, path: str, cfg, enhanced_path: Optional[str] = None) -> CallFigures:
        """The call figures of a recording of one or two tracks (`cfg`: components.config.CallsConfig): the
        voice-activity detector on each track as the denoiser writes it into `enhanced_path` (needed when the
        model denoises), or, without a denoiser, as recorded."""
        with wav_io.AudioFile(path) as audio:
            duration = audio.duration_s
            activity = CallActivity.from_config(audio.channels, cfg)
            if not self.denoises:
                for block in audio.blocks_16k(every_track=True):
                    activity.push(block)
        if self.denoises:
            self.denoise_tracks(path, enhanced_path, on_block=activity.push)
        return activity.finish(duration)

    def denoise(self, in_path: str, out_path: str, chunk_s: float = 10.0, overlap_s: float = 1.0) -> float:
        if not self.denoises:
            raise ValueError("this model has no denoiser (trainer.denoiser.enabled was false)")
        return denoise_file(in_path, out_path, self.enhance, chunk_s, overlap_s)
