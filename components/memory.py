"""Freed memory: kept for reuse while the Trainer runs, returned to the system after it.

TFX's LocalDagRunner runs every component in one Python process. The Trainer's input
pipeline allocates and frees hundreds of megabytes of records and batches from many
threads; glibc keeps what is freed in its per-thread arenas, so the process's RSS stays
at the Trainer's peak through the Evaluator and the Pusher. `malloc_trim(0)` hands the
free pages of every arena back (glibc only: a no-op elsewhere).

While training, the opposite: each featurized batch is a few tensors of 5 to 16 MB, and
glibc returns such blocks to the system when they are freed (munmap, or trimming the top of
an arena) and faults fresh zeroed pages in for the next batch, a third of the featurizer's
CPU time on 10-s clips. `keep_freed_memory` raises glibc's mmap and trim thresholds for the
duration (mallopt), so those blocks are reused; `release_freed_memory` then hands them back.
Hand-written because no maintained package wraps these libc calls.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc

import psutil
from absl import logging


def _libc():
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
_GLIBC_DEFAULT = 128 * 1024  # both thresholds' defaults
_MMAP_MAX = 32 * 2 ** 20  # the largest mmap threshold glibc takes on 64-bit (HEAP_MAX_SIZE / 2)


@contextlib.contextmanager
def keep_freed_memory(trim_threshold: int = 2 ** 30):
    """Inside: blocks up to 32 MB come from the heap, and up to `trim_threshold` bytes of
    free memory at an arena's top are kept, not returned to the system. After: glibc's
    defaults again (and its dynamic thresholds off); a no-op without glibc's mallopt."""
    libc = _libc()
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, _MMAP_MAX)
        mallopt(_M_TRIM_THRESHOLD, trim_threshold)
    try:
        yield mallopt is not None
    finally:
        if mallopt is not None:
            mallopt(_M_MMAP_THRESHOLD, _GLIBC_DEFAULT)
            mallopt(_M_TRIM_THRESHOLD, _GLIBC_DEFAULT)


def release_freed_memory(context: str) -> tuple[int, int]:
    """Collects garbage and returns freed heap pages to the system; (RSS before, RSS after) in bytes."""
    process = psutil.Process()
    gc.collect()
    before = process.memory_info().rss
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
    after = process.memory_info().rss
    logging.info("%s: returned %.0f MB of freed memory to the system (RSS %.0f -> %.0f MB)%s", context,
                 (before - after) / 2 ** 20, before / 2 ** 20, after / 2 ** 20,
                 "" if libc is not None else " (no glibc malloc_trim here)")
    return before, after
