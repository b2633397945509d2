"""Waiting in tests for what a background thread or another process does."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(condition: Callable[[], object], seconds: float = 10.0, what: str = "it") -> float:
    """Seconds until ``condition()`` holds; fails the test past ``seconds`` (a bound only a
    hang breaks, never a measurement)."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < seconds, f"{what} did not happen in {seconds} s"
        time.sleep(0.005)
    return time.monotonic() - started
