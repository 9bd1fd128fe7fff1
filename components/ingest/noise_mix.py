"""Noisy copies of clean utterances, mixed with recordings from a `noise_base`
folder (`noise_base/<noise kind>/*.wav`) at SNRs drawn from a range.

For each example without a clean reference, K copies: the noisy mixture as
`audio`, the clean signal as `clean_audio`, plus `noise_kind` and `snr_db`; the
label and group are the source's, so a copy stays in its speaker's split. The
draw depends only on (seed, source, window index, copy number): reruns give the
same examples, and each window of a long recording gets its own draw.
"""
from __future__ import annotations

import os
from typing import Dict, Iterable, List

import apache_beam as beam
import numpy as np
import tensorflow as tf
from absl import logging
from apache_beam.io.filesystems import FileSystems

from components import features
from components.audio import mixing, wav_io
from components.audio import stats as audio_stats


def load_noise(noise_base: str) -> Dict[str, List[np.ndarray]]:
    """{kind: [16 kHz mono float32 recordings]} from noise_base/<kind>/*.wav."""
    matches = FileSystems.match([os.path.join(noise_base, "*", "*.wav")])[0].metadata_list
    noise: Dict[str, List[np.ndarray]] = {}
    for meta in sorted(matches, key=lambda m: m.path):
        kind = os.path.basename(os.path.dirname(meta.path))
        with FileSystems.open(meta.path) as f:
            try:
                audio = wav_io.decode_to_mono_16k(f.read())
            except wav_io.AudioError as e:
                raise ValueError(f"noise file {meta.path}: {e}") from e
        if np.mean(audio ** 2) <= 0:
            raise ValueError(f"noise file {meta.path} is silent")
        noise.setdefault(kind, []).append(audio)
    if not noise:
        raise ValueError(f"data.noise_base={noise_base}: no noise recordings found; expected "
                         f"{noise_base}/<noise kind>/*.wav")
    return noise


class AddNoisyCopies(beam.DoFn):
    def __init__(self, noise_base: str, copies: int, snr_db_range: List[float], seed: int):
        self._noise_base = noise_base
        self._copies = copies
        self._low, self._high = (float(v) for v in snr_db_range)
        self._seed = seed
        self._noise: Dict[str, List[np.ndarray]] = {}

    def setup(self):
        self._noise = load_noise(self._noise_base)

    def process(self, example: tf.train.Example) -> Iterable[tf.train.Example]:
        feats = example.features.feature  # read only: Beam inputs must not be mutated, and
        if features.CLEAN_AUDIO in feats:  # feats[key] on a missing key would insert it
            return []  # already noisy with a reference
        source = feats[features.SOURCE].bytes_list.value[0].decode()
        index = feats[features.SEGMENT_INDEX].int64_list.value[0]
        clean = wav_io.decode_to_mono_16k(feats[features.AUDIO].bytes_list.value[0])
        if np.mean(clean ** 2) <= 0:
            return []  # silence cannot be mixed at an SNR
        return self._copies_of(example, source, index, clean)

    def _copies_of(self, example: tf.train.Example, source: str, index: int,
                   clean: np.ndarray) -> Iterable[tf.train.Example]:
        kinds = sorted(self._noise)
        for k in range(self._copies):
            rng = mixing.rng_for(self._seed, f"{source}#{k}" if index == 0 else f"{source}@{index}#{k}")
            kind = kinds[int(rng.integers(len(kinds)))]
            recordings = self._noise[kind]
            noise = recordings[int(rng.integers(len(recordings)))]
            snr = float(np.round(rng.uniform(self._low, self._high), 2))
            try:
                noisy, reference = mixing.mix_at_snr(clean, noise, snr, rng)
            except ValueError as e:  # a noise recording mostly silent: this copy is not made
                logging.warning("no noisy copy %d of %s: %s", k, source, e)
                continue
            copy = tf.train.Example()
            copy.CopyFrom(example)
            out = copy.features.feature
            out[features.AUDIO].bytes_list.value[:] = [wav_io.encode_pcm16_wav(noisy)]
            out[features.CLEAN_AUDIO].bytes_list.value[:] = [wav_io.encode_pcm16_wav(reference)]
            out[features.NOISE_KIND].bytes_list.value[:] = [kind.encode()]
            out[features.SNR_DB].float_list.value[:] = [snr]
            out[features.SOURCE].bytes_list.value[:] = [f"{source}#noisy{k}".encode()]
            # The mixture's own level, clipping and silence (at 16 kHz, mono); the source's
            # rate and channels stay the source's.
            for key, value in audio_stats.measure(noisy, features.SAMPLE_RATE, 1).items():
                if key not in (features.SOURCE_SAMPLE_RATE, features.SOURCE_CHANNELS):
                    out[key].float_list.value[:] = [value]
            yield copy
