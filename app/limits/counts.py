"""The pure counting behind the rate limits: fixed windows, counts per (kind, subject, window).

A limit allows ``limit`` events per ``seconds``-long window; windows are aligned on the Unix
epoch (a window starts at a multiple of its length), so every replica puts an event in the
same window without agreeing on anything but the clock. Fixed windows let a client send up to
twice its limit across one window boundary; in exchange a window is one integer per subject,
which replicas can add up in one table.

The decision for a subject is its local count (this replica, exact) plus the last-known count
of the other replicas (app/limits/limiter.py reads it back every flush).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, NamedTuple

Kind = Literal["client", "key", "auth"]
KINDS: tuple[Kind, ...] = ("client", "key", "auth")


@dataclass(frozen=True, slots=True)
class Limit:
    """At most ``limit`` events of ``kind`` per subject in each window of ``seconds``; 0: off."""

    kind: Kind
    limit: int
    seconds: int

    @property
    def on(self) -> bool:
        return self.limit > 0


@dataclass(frozen=True, slots=True)
class Limits:
    """The three limits: requests per client, requests per key, failed sign-ins per client."""

    per_client: Limit
    per_key: Limit
    auth_failures: Limit

    @property
    def on(self) -> bool:
        return self.per_client.on or self.per_key.on or self.auth_failures.on

    def all(self) -> tuple[Limit, Limit, Limit]:
        return self.per_client, self.per_key, self.auth_failures


class Slot(NamedTuple):
    """Where an event is counted: its kind, its subject, and its window's start (a tuple:
    one is made for every request, and a frozen dataclass costs three times as much)."""

    kind: Kind
    subject: str
    window: int  # Unix seconds, a multiple of the limit's window length


@dataclass(frozen=True, slots=True)
class Refusal:
    """Over a limit: which one, and the whole seconds until its window ends."""

    kind: Kind
    retry_after: int


def window_start(now: float, seconds: int) -> int:
    """The start of the window of ``seconds`` that holds ``now`` (Unix seconds)."""
    return int(now // seconds) * seconds


def seconds_left(now: float, seconds: int) -> int:
    """Whole seconds until the window holding ``now`` ends, at least 1 (``Retry-After``)."""
    return max(1, math.ceil(window_start(now, seconds) + seconds - now))


def slot_of(limit: Limit, subject: str, now: float) -> Slot:
    return Slot(limit.kind, subject, window_start(now, limit.seconds))


def over(limit: Limit, local: int, remote: int, adding: int = 1) -> bool:
    """Whether ``adding`` more events would take the window's count past the limit."""
    return limit.on and local + remote + adding > limit.limit


def add(counts: dict[Slot, int], slot: Slot, n: int = 1) -> None:
    counts[slot] = counts.get(slot, 0) + n


def merge(into: dict[Slot, int], counts: Mapping[Slot, int]) -> None:
    """Add ``counts`` into ``into`` (deltas a failed flush hands back)."""
    for slot, n in counts.items():
        add(into, slot, n)


def open_windows(limits: Iterable[Limit], now: float) -> dict[Kind, int]:
    """The start of each kind's window open at ``now`` (limits that are off have none)."""
    return {limit.kind: window_start(now, limit.seconds) for limit in limits if limit.on}


def current_only(
    counts: Iterable[tuple[Slot, int]], open_now: Mapping[Kind, int]
) -> dict[Slot, int]:
    """The counts of the windows still open (``open_windows``): closed ones count no more."""
    return {slot: n for slot, n in counts if open_now.get(slot.kind) == slot.window}
