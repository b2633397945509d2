"""Per source: how many calls may be in flight, and a circuit breaker.

The breaker belongs to the source, not to whoever calls it. It opens after ``failures``
consecutive failures of the source itself: unreachable, its own timeout, a 5xx, a malformed
answer. Whatever a caller causes never counts: its bad arguments, its own shorter
``timeout_seconds``, an answer too large for the gateway; and any answer of the source that
is not a 5xx (a 4xx, a tool's own error, a redirect) says the source is up, so it closes the
breaker as a success does.

While open, calls fail at once with ``circuit_open``. After ``cooldown`` seconds one call is
let through (half-open). Every call the breaker lets through ends in exactly one verdict:
``answered`` (closes it), ``failed`` (counts; a trial's failure opens it again for another
``cooldown``), or ``abandoned`` (it learned nothing: the trial, if it was one, is given back
for the next call). So a trial can never be left taken.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import anyio


@dataclass
class Ticket:
    """One call the breaker let through; ``trial``: it is the half-open trial."""

    trial: bool
    done: bool = False


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

    @property
    def closed(self) -> bool:
        return self.opened_at is None

    def enter(self) -> Ticket | None:
        """A ticket for a call that may go now (the half-open trial if it is due), or None."""
        if self.opened_at is None:
            return Ticket(trial=False)
        if self.trial or self._now() - self.opened_at < self.cooldown:
            return None
        self.trial = True
        return Ticket(trial=True)

    def retry_after(self) -> float:
        if self.opened_at is None:
            return 0.0
        return max(0.0, self.cooldown - (self._now() - self.opened_at))

    def answered(self, ticket: Ticket) -> None:
        """The source answered: it is up."""
        self.consecutive, self.opened_at = 0, None
        self._end(ticket)

    def failed(self, ticket: Ticket) -> None:
        """A failure of the source itself (one attempt of the call)."""
        self.consecutive += 1
        if (ticket.trial and not ticket.done) or self.consecutive >= self.failures:
            self.opened_at = self._now()
        self._end(ticket)

    def abandoned(self, ticket: Ticket) -> None:
        """The call ended without a word on the source's health (no-op after a verdict)."""
        self._end(ticket)

    def _end(self, ticket: Ticket) -> None:
        if ticket.trial and not ticket.done:
            self.trial = False
        ticket.done = True


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
