"""Voice-activity decisions on a stream of 16 kHz blocks, by WebRTC's detector (webrtcvad-wheels:
a maintained C detector needing no model download)."""
from __future__ import annotations

import collections
from typing import Deque, List, Optional, Tuple

import numpy as np
import webrtcvad

from components import features

FRAME = 480  # 30 ms at 16 kHz, a frame size webrtcvad takes
FRAME_S = FRAME / features.SAMPLE_RATE


class VadFrames:
    """`push(block)` -> one decision per whole 30-ms frame of the stream so far; the samples
    left over wait for the next block (memory: one block)."""

    def __init__(self, aggressiveness: int):
        self._vad = webrtcvad.Vad(int(aggressiveness))
        self._rest = np.zeros(0, np.int16)

    def push(self, block: np.ndarray) -> List[bool]:
        return self.push_with_levels(block)[0]

    def push_with_levels(self, block: np.ndarray) -> Tuple[List[bool], np.ndarray]:
        """The decisions, and each frame's level in dBFS."""
        pcm = np.concatenate([self._rest, (np.clip(block, -1, 1) * 32767).astype(np.int16)])
        whole = len(pcm) // FRAME * FRAME
        self._rest = pcm[whole:]
        frames = pcm[:whole].reshape(-1, FRAME)
        levels = 10 * np.log10(np.mean(np.square(frames / 32768.0), axis=1) + 1e-10)
        return [self._vad.is_speech(f.tobytes(), features.SAMPLE_RATE) for f in frames], levels


class NoiseFloorGate:
    """Frames whose level is at least `margin_db` over the track's noise floor: the `percentile`-th
    level of its last `window_s` of frames (memory: that window). webrtcvad alone takes much stationary
    noise and babble for speech (its decisions do not depend on the track's level); the gate keeps
    the detector's decisions where the frame also stands out of the noise, the minimum-statistics
    idea of noise-floor tracking (Martin 2001, IEEE TSAP 9(5)).

    With `low_margin_db`, a double threshold (the energy endpoint detector of Lamel et al. 1981, IEEE
    TASSP 29(4)): a run of detector frames over `low_margin_db` is speech when one of its frames stands
    `margin_db` over the floor, so a word's quiet onset and tail count with its loud middle. The frames
    of a run not yet decided are held back (a count) and returned once it is; `finish` returns the rest."""

    def __init__(self, margin_db: float, percentile: float, window_s: float, low_margin_db: Optional[float] = None):
        if low_margin_db is not None and low_margin_db > margin_db:
            raise ValueError(f"low_margin_db ({low_margin_db}) must not exceed margin_db ({margin_db})")
        self.margin_db, self.percentile, self.low_margin_db = margin_db, percentile, low_margin_db
        self._levels: Deque[float] = collections.deque(maxlen=max(int(window_s / FRAME_S), 1))
        self._held = 0  # frames of the open run over the low margin, none of them yet over margin_db
        self._confirmed = False  # the open run has a frame over margin_db

    def __call__(self, flags: List[bool], levels: np.ndarray) -> List[bool]:
        self._levels.extend(levels.tolist())
        if not self._levels:
            return list(flags)
        floor = float(np.percentile(np.fromiter(self._levels, float), self.percentile))
        if self.low_margin_db is None:
            return [f and lvl > floor + self.margin_db for f, lvl in zip(flags, levels)]
        out: List[bool] = []
        for f, lvl in zip(flags, levels):
            if not (f and lvl > floor + self.low_margin_db):
                out += self.finish() + [False]
            elif self._confirmed or lvl > floor + self.margin_db:
                out += [True] * (self._held + 1)
                self._held, self._confirmed = 0, True
            else:
                self._held += 1
        return out

    def finish(self) -> List[bool]:
        """The held frames of a run that ended (or a stream that did) without a frame over margin_db."""
        out = [False] * self._held
        self._held, self._confirmed = 0, False
        return out


def speech_share(samples: np.ndarray, aggressiveness: int) -> float:
    """The share of a window's whole 30-ms frames the detector calls speech (0 when it holds none)."""
    flags = VadFrames(aggressiveness).push(samples)
    return float(np.mean(flags)) if flags else 0.0
