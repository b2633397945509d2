"""A call's way past its source's limits, within its deadline: the breaker's ticket, one of
the source's slots, then attempts (a call safe to repeat is retried with backoff on a
retryable failure); and what each ending tells the breaker (app/gateway/limits.py).

The deadline is the source's own (``TOOLREACH_GATEWAY_TIMEOUT_SECONDS``) or the caller's
shorter ``timeout_seconds``, for the whole call: the wait for a slot, every attempt and the
backoff between them. Only the source's own running out counts against it, and only when
the attempt in flight had the whole of that time to itself: the caller's deadline, a wait
for a slot behind other calls (``overloaded`` if it never got one; ``timeout``, uncounted,
if the rest of the time ran out while it was sent), and an attempt after a failed one never
count. So no number of calls queued behind a slow operation can open its breaker; calls
that each had the source's whole time still do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from app.gateway.failures import CallFailed
from app.gateway.limits import Breaker, SourceLimits, Ticket

BACKOFF_SECONDS = 0.2
# An attempt that began this soon after its call began had the call's whole time to itself
# (the breaker's ticket and a free slot take microseconds).
HEAD_START_SECONDS = 0.05
Send = Callable[[], Awaitable[Any]]


@dataclass(frozen=True)
class Deadline:
    seconds: float
    callers: bool  # the caller's own timeout_seconds, shorter than the source's

    @classmethod
    def of(cls, asked: float | None, own: float) -> Deadline:
        return cls(asked, True) if asked is not None and asked < own else cls(own, False)


@dataclass
class _Run:
    ticket: Ticket
    started: float = field(default_factory=anyio.current_time)
    attempts: int = 0
    sending: bool = False  # past the wait for a slot
    sent_at: float = 0.0  # when the slot was had
    in_attempt: bool = False
    attempt_at: float = 0.0  # when the attempt in flight began
    last: CallFailed | None = None  # the last attempt's failure

    def had_it_all(self) -> bool:
        """Whether the attempt in flight began with the call: no wait for a slot, no
        attempt before it."""
        return self.attempt_at - self.started < HEAD_START_SECONDS


async def forward(
    source: str, limits: SourceLimits, deadline: Deadline, send: Send, *, attempts: int, safe: bool
) -> tuple[Any, int]:
    """The result of ``send`` and the requests it took; CallFailed otherwise."""
    breaker = limits.breaker
    ticket = breaker.enter()
    if ticket is None:
        raise CallFailed(
            "circuit_open",
            f"source {source!r} failed {breaker.failures} times in a row; "
            f"calls resume in {breaker.retry_after():.0f} s",
            retryable=True,
        )
    run = _Run(ticket)
    try:
        with anyio.move_on_after(deadline.seconds):
            async with limits.slots:
                run.sending, run.sent_at = True, anyio.current_time()
                return await _attempts(breaker, run, send, attempts, safe), run.attempts
        raise _late(source, deadline, breaker, run)
    except TimeoutError:  # the source's own time ran out inside: its connection, its session
        run.in_attempt = True
        raise _late(source, deadline, breaker, run, own=True) from None
    finally:
        breaker.abandoned(ticket)  # a call that ended without a verdict gives the trial back


async def _attempts(breaker: Breaker, run: _Run, send: Send, attempts: int, safe: bool) -> Any:
    while True:
        run.attempts += 1
        run.in_attempt = True  # until it ends: the deadline may cancel it
        run.attempt_at = anyio.current_time()
        try:
            result = await send()
        except CallFailed as failure:
            run.in_attempt = False
            _judge(breaker, run, failure)
            if not (failure.retryable and safe and run.attempts < attempts and breaker.closed):
                raise
            await anyio.sleep(BACKOFF_SECONDS * 2 ** (run.attempts - 1))
        else:
            breaker.answered(run.ticket)
            return result


def _judge(breaker: Breaker, run: _Run, failure: CallFailed) -> None:
    """What a failed attempt tells the breaker; the requests the call has sent so far."""
    sent = failure.answered or failure.source_fault
    failure.attempts = run.attempts if sent else run.attempts - 1
    run.last = failure
    if failure.source_fault:
        breaker.failed(run.ticket)
    elif failure.answered:
        breaker.answered(run.ticket)


def _late(
    source: str, deadline: Deadline, breaker: Breaker, run: _Run, *, own: bool = False
) -> CallFailed:
    """The answer to a call whose deadline passed, and its count against the source.
    ``own``: a bound of the source's connection or session ran out (always its own)."""
    if run.last is not None and not run.in_attempt:
        return run.last  # out of time between two attempts: the last one's failure stands
    if not run.sending:
        failure = CallFailed(
            "overloaded",
            f"source {source!r} has as many calls in flight as it takes; none ended within "
            f"{deadline.seconds:g} s",
            retryable=True,
        )
    elif deadline.callers and not own:
        failure = CallFailed(
            "timeout",
            f"no answer from source {source!r} in time: within the call's timeout_seconds "
            f"({deadline.seconds:g} s)",
            retryable=True,
        )
    elif own or run.had_it_all():
        breaker.failed(run.ticket)
        failure = CallFailed(
            "timeout",
            f"no answer from source {source!r} in time: within {deadline.seconds:g} s",
            retryable=True,
            source_fault=True,
        )
    else:
        failure = _cut_short(source, deadline, run)
    failure.attempts = run.attempts
    if run.sending:
        failure.details = {"cause": "timeout"}
    return failure


def _cut_short(source: str, deadline: Deadline, run: _Run) -> CallFailed:
    """The call's time ran out while an attempt that did not have all of it was in flight:
    the call's timeout, not the source's (never counted)."""
    waited = run.sent_at - run.started
    spent = f"{waited:.1f} s of which waiting for a slot behind other calls"
    if run.attempts > 1:
        spent = f"{run.attempts - 1} attempt(s) before this one"
    return CallFailed(
        "timeout",
        f"no answer from source {source!r} within the call's {deadline.seconds:g} s, "
        f"{spent}; the source's own time did not run out",
        retryable=True,
    )
