"""Loaded by a server started with this folder on ``PYTHONPATH`` (``python -m
bench.perf.soak --trace``): tracemalloc from the start, a snapshot written every
``BENCH_TRACE_EVERY`` seconds (default 60) to ``BENCH_TRACE_DIR/<pid>-<n>.snap``. Bench-only:
never in the service.

Compare two snapshots with ``python -m bench.perf.heap_diff A B``.
"""

from __future__ import annotations

import os
import threading
import time
import tracemalloc

_DIR = os.environ.get("BENCH_TRACE_DIR")


def _dump(folder: str, every: float) -> None:
    n = 0
    while True:
        time.sleep(every)
        tracemalloc.take_snapshot().dump(os.path.join(folder, f"{os.getpid()}-{n:03d}.snap"))
        n += 1


if _DIR:
    tracemalloc.start(int(os.environ.get("BENCH_TRACE_FRAMES", "8")))
    every = float(os.environ.get("BENCH_TRACE_EVERY", "60"))
    threading.Thread(target=_dump, args=(_DIR, every), daemon=True, name="heap-trace").start()
