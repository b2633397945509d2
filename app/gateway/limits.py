"""Per source: how many calls may be in flight, and a circuit breaker.

The breaker opens after ``failures`` consecutive failures of the source itself (unreachable,
timed out, a 5xx, a malformed answer; never a 4xx or a tool's own error, which say nothing
of the source's health). While open, calls fail at once with ``circuit_open``. After
``cooldown`` seconds one call is let through (half-open): its success closes the breaker,
its failure opens it again for another ``cooldown``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import anyio


@dataclass
class Breaker:
    failures: int
    cooldown: float
    consecutive: int = 0
    opened_at: float | None = None
    trial: bool = False
    clock: object = field(default=time.monotonic, repr=False)

    def _now(self) -> float:
        return float(self.clock())  # type: ignore[operator]

    def allow(self) -> bool:
        """Whether a call may go now (taking the half-open trial if it is due)."""
        if self.opened_at is None:
            return True
        if self.trial or self._now() - self.opened_at < self.cooldown:
            return False
        self.trial = True
        return True

    def retry_after(self) -> float:
        if self.opened_at is None:
            return 0.0
        return max(0.0, self.cooldown - (self._now() - self.opened_at))

    def succeeded(self) -> None:
        self.consecutive, self.opened_at, self.trial = 0, None, False

    def failed(self) -> None:
        self.consecutive += 1
        if self.trial or self.consecutive >= self.failures:
            self.opened_at = self._now()
        self.trial = False


@dataclass
class SourceLimits:
    """The breaker and the in-flight limit of one source."""

    breaker: Breaker
    slots: anyio.Semaphore


class Limits:
    def __init__(self, concurrency: int, failures: int, cooldown: float) -> None:
        self._concurrency = concurrency
        self._failures = failures
        self._cooldown = cooldown
        self._by_source: dict[str, SourceLimits] = {}

    def of(self, source: str) -> SourceLimits:
        limits = self._by_source.get(source)
        if limits is None:
            limits = SourceLimits(
                Breaker(self._failures, self._cooldown), anyio.Semaphore(self._concurrency)
            )
            self._by_source[source] = limits
        return limits
