"""glibc's allocator, told to give large blocks back: a fixed mmap threshold.

Every write makes a new index beside the old one: its tool matrix (4,075 tools × 896
float32 = 14.6 MB), its BM25 arrays, its look-alike lists, each a block of hundreds of KB to
tens of MB, the old ones freed a moment later. glibc serves a block above its mmap threshold
(128 KiB at first) with its own ``mmap`` and unmaps it when freed; but each time it frees
such a block it raises the threshold to that block's size (up to 32 MiB), so from the
second write on the matrices come from the heap of whichever thread's arena merged them.
Freed there, between live blocks, they stay in the process: RSS grew with every write while
the live data hardly did (bench/perf/write_rss.py; docs/BENCHMARKS.md, "Multi-replica
soak"). Setting the threshold (``mallopt``) turns that adjustment off: large blocks are
always mapped, and unmapped when freed.

At 4 MiB (the default) the matrices are mapped and the smaller arrays come from the heap,
where they are reused: at 128 KiB every BM25 array of a merge was a fresh mapping, whose
pages the kernel faults in and zeroes, and merges were slower for no less RSS
(bench/perf/write_rss.py; docs/BENCHMARKS.md).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from typing import Any

log = logging.getLogger("toolreach.malloc")

M_MMAP_THRESHOLD = -3  # glibc's malloc.h
M_ARENA_MAX = -8


def _mallopt() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to set
        log.info("no mallopt in this C library; the allocator keeps its own settings")
        return None
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt


def limit_arenas(arenas: int) -> bool:
    """At most ``arenas`` malloc arenas (``0``: glibc's default, 8 per core). Each thread that
    allocates gets an arena of its own up to that number (the route workers, the model's
    calls, the event writer, the index merges, the event loop), and memory freed in one arena
    serves only that arena's later blocks, so a process of many threads holds more than it
    uses. Whether it was set (false where the C library is not glibc)."""
    if arenas <= 0:
        return False
    mallopt = _mallopt()
    return mallopt is not None and bool(mallopt(M_ARENA_MAX, arenas))


def fix_mmap_threshold(threshold: int) -> bool:
    """Serve every block of at least ``threshold`` bytes with its own mapping, for the life
    of the process (``0``: leave glibc's dynamic threshold). Whether it was set: false where
    the C library is not glibc, or refused the value (above 32 MiB on 64-bit)."""
    if threshold <= 0:
        return False
    mallopt = _mallopt()
    return mallopt is not None and bool(mallopt(M_MMAP_THRESHOLD, threshold))
