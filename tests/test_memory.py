"""`release_freed_memory` gives back heap pages that freed allocations left behind."""
import ctypes
import ctypes.util

import pytest

from components.training import memory

libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]


@pytest.mark.skipif(not hasattr(libc, "malloc_trim"), reason="malloc_trim is glibc's; other libcs have no such call")
def test_freed_heap_pages_pinned_under_a_live_chunk_go_back_to_the_system():
    # 64 kB chunks come from the heap (below glibc's mmap threshold); one live chunk on top
    # keeps the heap from shrinking by itself, so the freed 400 MB beneath it stay resident.
    chunk, count = 64 * 1024, 6400
    blocks = [libc.malloc(chunk) for _ in range(count)]
    for block in blocks:
        ctypes.memset(block, 1, chunk)  # make the pages resident
    top = libc.malloc(chunk)
    for block in blocks:
        libc.free(block)
    try:
        before, after = memory.release_freed_memory("test")
        assert before - after > 0.5 * chunk * count
    finally:
        libc.free(top)
