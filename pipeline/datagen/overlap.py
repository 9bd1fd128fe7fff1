"""Does a training recording share audio with a test recording? The check for a package added to the real-audio data.

Game packages reuse the same freesound.org recordings (SuperTuxKart's rain came from MegaGlest), so a new training
package must not hold a test file's recording under another name, cut or level. For every pair (training file, test
file) this cuts the shorter one into 3-s excerpts every 1.5 s and slides each over the longer one: the normalized
cross-correlation at any lag, the largest over excerpts and lags; any shared stretch of 4.5 s or more holds a whole
excerpt (and shorter files are slid whole). A copy scores 1.0 at any offset and gain (edits and re-encodings a
little less); unrelated recordings of the same kind score well under 0.5 (docs/data-sources.md has the figures).
At 2 kHz by default: enough to tell recordings apart, and cheap. Hand-written because no library in the lock
offers sliding normalized cross-correlation over 1-D signals (scipy gives the correlation, not the sliding norm).

    python -m pipeline.datagen.overlap --train data/real/noise_train --test data/real/noise_test \\
        --sources supertuxkart unknown_horizons --skip-kind music
"""
from __future__ import annotations

import argparse
import glob
import os
from typing import Iterable, List, Sequence, Tuple

import numpy as np
import soundfile
import soxr
from scipy import signal


def load(path: str, rate: int) -> np.ndarray:
    audio, source_rate = soundfile.read(path, dtype="float32", always_2d=True)
    return soxr.resample(audio.mean(axis=1), source_rate, rate, quality="HQ").astype(np.float32)


def sliding_ncc(template: np.ndarray, longer: np.ndarray) -> float:
    """The largest normalized cross-correlation of `template` with any stretch of `longer` of its length, each
    stretch's own mean removed (|value|, so that a polarity flip is a copy too)."""
    m = len(template)
    if m == 0 or len(longer) < m:
        return 0.0
    template = template.astype(np.float64) - template.mean()
    norm = float(np.sqrt(np.sum(template ** 2)))
    if norm == 0.0:
        return 0.0
    longer = longer.astype(np.float64)
    dots = signal.fftconvolve(longer, template[::-1], mode="valid")  # (the template's mean is 0: no mean term)
    sums = np.cumsum(np.concatenate([[0.0], longer]))
    squares = np.cumsum(np.concatenate([[0.0], longer ** 2]))
    window_sum = sums[m:] - sums[:-m]
    local = np.sqrt(np.maximum(squares[m:] - squares[:-m] - window_sum ** 2 / m, 0.0))
    ok = local > 1e-6 * norm  # digital silence matches nothing
    return float(np.max(np.abs(dots[ok]) / (local[ok] * norm))) if ok.any() else 0.0


def excerpts(audio: np.ndarray, length: int) -> List[np.ndarray]:
    """Excerpts of `length` samples every half length, covering `audio` whole (itself when it is shorter), so any
    shared stretch of at least 1.5 lengths holds a whole excerpt."""
    if len(audio) <= length:
        return [audio]
    starts = list(range(0, len(audio) - length, length // 2)) + [len(audio) - length]
    return [audio[s:s + length] for s in starts]


def score(a: np.ndarray, b: np.ndarray, rate: int, excerpt_s: float = 3.0) -> float:
    """How much of the shorter of `a` and `b` is found in the other: the largest sliding NCC of its excerpts."""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return max(sliding_ncc(x, long_) for x in excerpts(short, int(excerpt_s * rate)))


def files(root: str, sources: Sequence[str] = (), skip_kinds: Sequence[str] = ()) -> List[str]:
    """`root/<kind>/<source>__<name>.wav` (the real-audio layout), of `sources` only when given."""
    found = []
    for path in sorted(glob.glob(os.path.join(root, "*", "*.wav"))):
        kind = os.path.basename(os.path.dirname(path))
        source = os.path.basename(path).split("__", 1)[0]
        if kind not in skip_kinds and (not sources or source in sources):
            found.append(path)
    return found


def check(train: Iterable[str], test: Iterable[str], rate: int = 2000) -> List[Tuple[float, str, str]]:
    """(score, training file, test file) for every pair, highest first."""
    tests = [(path, load(path, rate)) for path in test]
    rows = []
    for path in train:
        audio = load(path, rate)
        rows.extend((score(audio, other, rate), path, other_path) for other_path, other in tests)
    return sorted(rows, reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", required=True, help="training noise, <kind>/<source>__<name>.wav")
    parser.add_argument("--test", required=True, help="test noise, the same layout")
    parser.add_argument("--sources", nargs="*", default=(), help="only these training sources (default: all)")
    parser.add_argument("--skip-kind", nargs="*", default=(), help="noise kinds left out on both sides")
    parser.add_argument("--rate", type=int, default=2000, help="the rate compared at (Hz)")
    parser.add_argument("--show", type=int, default=10, help="how many of the highest pairs to print")
    parser.add_argument("--limit", type=float, default=0.5, help="a pair at or above this is reported as shared")
    args = parser.parse_args()
    train = files(args.train, args.sources, args.skip_kind)
    test = files(args.test, (), args.skip_kind)
    if not train or not test:
        raise SystemExit(f"nothing to compare: {len(train)} training and {len(test)} test files")
    rows = check(train, test, args.rate)
    print(f"{len(train)} training x {len(test)} test files at {args.rate} Hz; highest normalized cross-correlation:")
    for value, a, b in rows[:args.show]:
        print(f"  {value:.3f}  {os.path.relpath(a, args.train)}  {os.path.relpath(b, args.test)}")
    shared = [r for r in rows if r[0] >= args.limit]
    print(f"{len(shared)} pair(s) at or above {args.limit}")
    raise SystemExit(1 if shared else 0)


if __name__ == "__main__":
    main()
