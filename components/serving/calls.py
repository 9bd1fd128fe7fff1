"""Call-level QA figures of a two-track call (agent and customer each on a track): talk time per
track, overtalk (both speaking) seconds and count, the silence share and the longest silence.

Each track's speech regions come from the voice-activity detector the ExampleGen uses
(components/audio/vad.py, segments.RegionStream), fed block by block; the regions of both tracks
are swept in order of their start as they are finished, so memory holds a few regions, whatever
the call's length.
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Deque, Dict, List, Optional, Sequence

import numpy as np

from components.audio import vad
from components.ingest import segments


@dataclasses.dataclass
class CallFigures:
    duration_s: float
    talk_s: List[float]  # per track
    overtalk_s: float  # both tracks speaking
    overtalk_count: int  # stretches of overtalk
    silence_s: float  # neither speaking
    longest_silence_s: float

    @property
    def silence_share(self) -> float:
        return self.silence_s / self.duration_s if self.duration_s > 0 else 0.0

    def row(self, roles: Sequence[str]) -> Dict[str, float]:
        out: Dict[str, float] = {f"{role}_talk_s": round(t, 2) for role, t in zip(roles, self.talk_s)}
        out.update(overtalk_s=round(self.overtalk_s, 2), overtalk_count=self.overtalk_count,
                   silence_share=round(self.silence_share, 4), longest_silence_s=round(self.longest_silence_s, 2))
        return out


def figures_of(regions: Sequence[Sequence[segments.Interval]], duration_s: float) -> CallFigures:
    """The figures of whole region lists (one a track), for tests and a call's ground truth."""
    sweep = CallSweep(len(regions))
    for track, found in enumerate(regions):
        sweep.add(track, found, float("inf"))
    return sweep.finish(duration_s)


class CallSweep:
    """The figures from each track's speech regions, given in order of start as they are found,
    with how far each track has settled (no region of it still to come starts earlier)."""

    _TOUCH_S = 1e-6  # overtalk stretches closer than this are one

    def __init__(self, tracks: int):
        if not 1 <= tracks <= 2:
            raise ValueError(f"call figures are for one or two tracks (agent and customer); got {tracks}")
        self._pending: List[Deque[segments.Interval]] = [collections.deque() for _ in range(tracks)]
        self._settled = [0.0] * tracks
        self._active: List[Optional[segments.Interval]] = [None] * tracks  # the latest region swept, per track
        self._talk = [0.0] * tracks
        self._union_end = 0.0  # where the speech swept so far ends
        self._silence = self._longest = 0.0
        self._overtalk = 0.0
        self._overtalk_count = 0
        self._overtalk_end = float("-inf")

    def add(self, track: int, regions: Sequence[segments.Interval], settled_s: float) -> None:
        self._pending[track].extend(regions)
        self._settled[track] = settled_s
        self._sweep()

    def _sweep(self) -> None:
        while True:
            heads = [(q[0][0], t) for t, q in enumerate(self._pending) if q]
            if not heads:
                return
            start, track = min(heads)
            # safe only when no other track can still give a region starting earlier
            if any(not self._pending[t] and self._settled[t] < start for t in range(len(self._pending))):
                return
            self._take(track, self._pending[track].popleft())

    def _take(self, track: int, region: segments.Interval) -> None:
        start, end = region
        self._talk[track] += end - start
        if start > self._union_end:
            gap = start - self._union_end
            self._silence += gap
            self._longest = max(self._longest, gap)
        self._union_end = max(self._union_end, end)
        for other, seen in enumerate(self._active):
            if other != track and seen is not None and seen[1] > start:  # seen starts at or before `start`
                o_end = min(seen[1], end)
                self._overtalk += o_end - start
                if start > self._overtalk_end + self._TOUCH_S:
                    self._overtalk_count += 1
                self._overtalk_end = max(self._overtalk_end, o_end)
        self._active[track] = region

    def finish(self, duration_s: float) -> CallFigures:
        self._settled = [float("inf")] * len(self._settled)
        self._sweep()
        if duration_s > self._union_end:
            gap = duration_s - self._union_end
            self._silence += gap
            self._longest = max(self._longest, gap)
        return CallFigures(duration_s, list(self._talk), self._overtalk, self._overtalk_count, self._silence,
                           self._longest)


class CallActivity:
    """Blocks of a call's tracks ([samples, tracks] at 16 kHz, in order) -> its CallFigures. A frame
    is speech when the detector says so and, with `floor_margin_db`, its level stands that far above
    the track's noise floor, or, with `floor_low_margin_db` too, it is in a run over that lower margin
    that has such a frame (vad.NoiseFloorGate)."""

    def __init__(self, tracks: int, aggressiveness: int, min_gap_s: float, pad_s: float,
                 floor_margin_db: Optional[float] = None, floor_percentile: float = 30.0,
                 floor_window_s: float = 30.0, floor_low_margin_db: Optional[float] = None):
        self._frames = [vad.VadFrames(aggressiveness) for _ in range(tracks)]
        self._gates = [None if floor_margin_db is None else
                       vad.NoiseFloorGate(floor_margin_db, floor_percentile, floor_window_s,
                                           floor_low_margin_db) for _ in range(tracks)]
        self._regions = [segments.RegionStream(vad.FRAME_S, min_gap_s, pad_s) for _ in range(tracks)]
        self._sweep = CallSweep(tracks)

    @classmethod
    def from_config(cls, tracks: int, cfg) -> "CallActivity":
        """With the `calls` settings (components.config.CallsConfig)."""
        return cls(tracks, cfg.vad_aggressiveness, cfg.min_gap_s, cfg.pad_s, cfg.floor_margin_db,
                   cfg.floor_percentile, cfg.floor_window_s, cfg.floor_low_margin_db)

    def push(self, block: np.ndarray) -> None:
        for t, (frames, gate, regions) in enumerate(zip(self._frames, self._gates, self._regions)):
            flags, levels = frames.push_with_levels(block[:, t])
            found = regions.push(flags if gate is None else gate(flags, levels))
            self._sweep.add(t, found, regions.settled_s)

    def finish(self, duration_s: float) -> CallFigures:
        for t, (gate, regions) in enumerate(zip(self._gates, self._regions)):
            held = regions.push(gate.finish()) if gate is not None else []
            self._sweep.add(t, held + regions.finish(duration_s), float("inf"))
        return self._sweep.finish(duration_s)
