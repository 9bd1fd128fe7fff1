"""Which stretches of a recording become examples, and where every other second goes.

Pure planning on times in seconds, no audio: a recording of `duration` seconds,
its labelled spans (from `segments.csv`, or one span with the file's label),
optionally its speech regions (voice-activity detection), give the example
windows and the seconds dropped, by reason. The ExampleGen then reads just those
windows from the file, so its memory is bounded by a window, not by the file.

Accounting: every second of the recording is either covered by an example
window or dropped with a reason; `account` checks it adds up.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

Interval = Tuple[float, float]

# Reasons a stretch of an accepted recording is not in any example.
UNLABELLED = "unlabelled (no span in segments.csv covers it)"
TOO_SHORT = "shorter than data.min_segment_s (a tail or a short span)"
NO_SPEECH = "no speech (voice-activity detection)"
SILENT = "digitally silent (every sample zero)"
_EPS = 1e-9


@dataclasses.dataclass(frozen=True)
class Window:
    start_s: float
    end_s: float
    label: str
    index: int  # position among the recording's examples

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclasses.dataclass(frozen=True)
class Plan:
    windows: List[Window]
    covered_s: float  # seconds under at least one window
    dropped_s: Dict[str, float]  # reason -> seconds


def labelled_intervals(duration: float, spans: Sequence[Tuple[float, float, str]],
                       background: Optional[str]) -> List[Tuple[float, float, Optional[str]]]:
    """[0, duration) cut into the spans (clipped to the recording) and the gaps between
    them, the gaps labelled `background` (None: unlabelled). Spans must not overlap."""
    out: List[Tuple[float, float, Optional[str]]] = []
    cursor = 0.0
    for start, end, label in sorted(spans):
        start, end = max(start, 0.0), min(end, duration)
        if start < cursor - _EPS:
            raise ValueError(f"span {start:.3f}-{end:.3f} s ({label}) overlaps the previous span")
        if end <= start:
            continue
        if start > cursor:
            out.append((cursor, start, background))
        out.append((start, end, label))
        cursor = end
    if cursor < duration:
        out.append((cursor, duration, background))
    return out


def _intersect(a: Interval, regions: Sequence[Interval]) -> List[Interval]:
    return [(max(a[0], s), min(a[1], e)) for s, e in regions if min(a[1], e) > max(a[0], s)]


def _windows_in(start: float, end: float, segment_s: float, hop_s: float,
                min_segment_s: float) -> List[Interval]:
    """Windows of segment_s every hop_s from `start`; the last one ends at `end` at the
    latest; windows under min_segment_s are left out."""
    out: List[Interval] = []
    t = start
    while t < end - _EPS:
        w_end = min(t + segment_s, end)
        if w_end - t >= min_segment_s - _EPS:
            out.append((t, w_end))
        if w_end >= end - _EPS:
            break
        t += hop_s
    return out


def union_length(intervals: Sequence[Interval]) -> float:
    total, cursor = 0.0, float("-inf")
    for s, e in sorted(intervals):
        if e > cursor:
            total += e - max(s, cursor)
            cursor = e
    return total


def plan(duration: float, spans: Sequence[Tuple[float, float, str]], background: Optional[str],
         segment_s: float, hop_s: float, min_segment_s: float,
         speech: Optional[Sequence[Interval]] = None) -> Plan:
    """The example windows of one recording and the seconds each reason drops.

    With `speech` (voice-activity regions) windows lie inside speech only; each speech
    region inside a labelled interval is cut into windows on its own."""
    if not 0 < hop_s <= segment_s:
        raise ValueError(f"need 0 < data.hop_s ({hop_s}) <= data.segment_s ({segment_s})")
    windows: List[Window] = []
    dropped = {UNLABELLED: 0.0, TOO_SHORT: 0.0, NO_SPEECH: 0.0}
    covered = 0.0
    for start, end, label in labelled_intervals(duration, spans, background):
        if label is None:
            dropped[UNLABELLED] += end - start
            continue
        pieces = [(start, end)] if speech is None else _intersect((start, end), speech)
        dropped[NO_SPEECH] += (end - start) - sum(e - s for s, e in pieces)
        for p_start, p_end in pieces:
            cut = _windows_in(p_start, p_end, segment_s, hop_s, min_segment_s)
            kept = union_length(cut)
            covered += kept
            dropped[TOO_SHORT] += (p_end - p_start) - kept
            windows += [Window(s, e, label, len(windows) + i) for i, (s, e) in enumerate(cut)]
    return Plan(windows, covered, {k: v for k, v in dropped.items() if v > 1e-6})


def speech_regions(flags: Sequence[bool], frame_s: float, min_gap_s: float, pad_s: float,
                   duration: float) -> List[Interval]:
    """Per-frame voice decisions -> speech regions: runs of voiced frames, each padded by
    pad_s, merged when the silence between them is under min_gap_s."""
    stream = RegionStream(frame_s, min_gap_s, pad_s)
    return stream.push(flags) + stream.finish(duration)


class RegionStream:
    """`speech_regions` on a stream of frame decisions: `push` returns the regions finished so
    far (none can change once returned), `finish` the rest. Holds one region, whatever the
    stream's length."""

    def __init__(self, frame_s: float, min_gap_s: float, pad_s: float):
        self.frame_s, self.min_gap_s, self.pad_s = frame_s, min_gap_s, pad_s
        self._frames = 0  # frames seen
        self._run_start: Optional[int] = None  # the open run of voiced frames
        self._last: Optional[Interval] = None  # the latest region, still open to a merge

    def push(self, flags: Sequence[bool]) -> List[Interval]:
        done: List[Interval] = []
        for voiced in flags:
            if voiced and self._run_start is None:
                self._run_start = self._frames
            elif not voiced and self._run_start is not None:
                self._close(self._frames, float("inf"), done)
            self._frames += 1
        # the latest region is final once no run could start close enough to merge with it
        if self._last is not None and self._run_start is None and \
                self._frames * self.frame_s - self.pad_s - self._last[1] >= self.min_gap_s:
            done.append(self._last)
            self._last = None
        return done

    def _close(self, end_frame: int, duration: float, done: List[Interval]) -> None:
        s = max(self._run_start * self.frame_s - self.pad_s, 0.0)
        e = min(end_frame * self.frame_s + self.pad_s, duration)
        self._run_start = None
        if self._last is not None and s - self._last[1] < self.min_gap_s:
            self._last = (self._last[0], e)
        else:
            if self._last is not None:
                done.append(self._last)
            self._last = (s, e)

    @property
    def settled_s(self) -> float:
        """No region still to come (or still changing) starts before this time."""
        if self._last is not None:
            return self._last[0]
        if self._run_start is not None:
            return max(self._run_start * self.frame_s - self.pad_s, 0.0)
        return max(self._frames * self.frame_s - self.pad_s, 0.0)

    def finish(self, duration: float) -> List[Interval]:
        done: List[Interval] = []
        if self._run_start is not None:
            self._close(self._frames, duration, done)
        if self._last is not None:
            done.append((self._last[0], min(self._last[1], duration)))
            self._last = None
        return done
