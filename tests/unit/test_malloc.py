"""A freed index goes back to the system: glibc's mmap threshold, fixed (capacity/malloc.py).

Each case runs in a fresh interpreter: the threshold is per process and never reset.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.capacity.malloc import fix_mmap_threshold, limit_arenas

ROOT = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024

# What each write does to a 4,075-tool namespace: a new 14.6 MB matrix beside the old one,
# the old one freed, and a few small objects that outlive it (the new index's own).
WRITES = textwrap.dedent(
    """
    import sys
    import numpy as np
    from app.capacity.malloc import fix_mmap_threshold

    def rss_kib():
        with open("/proc/self/status") as status:
            return next(int(l.split()[1]) for l in status if l.startswith("VmRSS"))

    if sys.argv[1] != "0":
        assert fix_mmap_threshold(int(sys.argv[1]))
    kept = []
    start = rss_kib()
    matrix = np.ones((4075, 896), dtype=np.float32)
    for write in range(40):
        new = np.ones((4075, 896), dtype=np.float32)
        kept.append(bytearray(65536))  # smaller, live (malloc, not pymalloc): pins the heap
        del matrix
        matrix = new
    del matrix, new  # the namespace's last index gone: every matrix freed
    print(rss_kib() - start)
    """
)


def grown_kib(threshold: int) -> int:
    out = subprocess.run(
        [sys.executable, "-c", WRITES, str(threshold)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    return int(out.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_a_fixed_threshold_gives_each_freed_matrix_back() -> None:
    assert grown_kib(128 * 1024) < 8 * 1024  # freed: none of the 14.6 MB matrices kept


def test_zero_leaves_the_allocator_alone() -> None:
    assert fix_mmap_threshold(0) is False


def test_arenas_are_limited_only_when_asked() -> None:
    assert limit_arenas(0) is False
    assert limit_arenas(2) is (sys.platform == "linux")
