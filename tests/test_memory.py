"""`release_freed_memory` gives back heap pages that freed allocations left behind."""
import ctypes
import ctypes.util

import pytest

from components import memory

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


def _faults_of_cycles(cycles: int = 20, size: int = 16 * 2 ** 20) -> int:
    """Minor page faults of allocating, touching and freeing a `size` block `cycles` times."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(cycles):
        block = libc.malloc(size)
        ctypes.memset(block, 1, size)
        libc.free(block)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@pytest.mark.skipif(not hasattr(libc, "mallopt"), reason="mallopt is glibc's; other libcs have no such call")
def test_inside_keep_freed_memory_a_freed_batch_buffer_is_reused_not_faulted_in_again():
    # glibc's default: a 16 MB block is mmapped and unmapped each time (4,096 fresh pages each)
    libc.mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD fixed at its default
    pages = 16 * 2 ** 20 // 4096
    assert _faults_of_cycles() > 10 * pages
    with memory.keep_freed_memory() as active:
        assert active
        assert _faults_of_cycles() < 3 * pages  # the first cycle's pages, then reuse
    assert _faults_of_cycles() > 10 * pages  # glibc's defaults are back
    memory.release_freed_memory("test")
