"""Returning freed memory to the system between the components of one process.

TFX's LocalDagRunner runs every component in one Python process. The Trainer's input
pipeline allocates and frees hundreds of megabytes of records and batches from many
threads; glibc keeps what is freed in its per-thread arenas, so the process's RSS stays
at the Trainer's peak through the Evaluator and the Pusher. `malloc_trim(0)` hands the
free pages of every arena back (glibc only: a no-op elsewhere). Hand-written because no
maintained package wraps this one libc call.
"""
from __future__ import annotations

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
