"""The rate limiter of one replica: exact local counts, the others' read back every second.

A request is counted and decided in memory, under one lock, in microseconds: the database
is never on a request's path. A background thread (``flush``, every ``flush_seconds``) adds
this replica's new counts to the ``rate_counts`` table (app/limits/repository.py), reads the
other replicas' counts of the open windows, and deletes closed windows. A decision is
``local + last-known remote``, so replicas share a limit within about one flush.

When the database fails, nothing waits on it and nothing is lost: the new counts stay
pending and go out with the next flush that works (those of closed windows are dropped:
they no longer matter), and the other replicas' counts are forgotten, so each replica
decides on its own counts only until the database answers again.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from app.db import unit_of_work
from app.limits import repository
from app.limits.client import Network, client_address, networks
from app.limits.counts import (
    Kind,
    Limit,
    Limits,
    Refusal,
    Slot,
    add,
    current_only,
    merge,
    open_windows,
    over,
    seconds_left,
    slot_of,
)
from app.limits.models import SUBJECT_LENGTH
from app.settings import Settings

log = logging.getLogger("toolreach.limits")
# Rows this old go whatever their kind: two of the longest window a setting allows (a day).
FORGET_SECONDS = 2 * 86_400


def limits_of(settings: Settings) -> Limits:
    """The three limits the settings set (docs/CONFIGURATION.md, "Rate limits")."""
    return Limits(
        Limit("client", settings.rate_limit_per_client, settings.rate_limit_window_seconds),
        Limit("key", settings.rate_limit_per_key, settings.rate_limit_window_seconds),
        Limit("auth", settings.auth_failures_per_client, settings.auth_failure_window_seconds),
    )


class RateLimiter:
    """Counts requests and failed sign-ins per subject; refuses those over a limit."""

    def __init__(
        self,
        limits: Limits,
        factory: sessionmaker[Session] | None = None,
        *,
        flush_seconds: float = 1.0,
        trusted_proxies: Sequence[Network] = (),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.limits, self._factory, self._clock = limits, factory, clock
        self.trusted_proxies = tuple(trusted_proxies)
        self.flush_seconds = flush_seconds
        self.replica = secrets.token_hex(8)  # this process's rows in rate_counts
        self._local: dict[Slot, int] = {}  # this replica's counts of the open windows
        self._pending: dict[Slot, int] = {}  # of those, what the table does not have yet
        self._remote: dict[Slot, int] = {}  # the other replicas' counts, as last read
        self._writing = False  # a flush holds counts the table does not have yet
        self._forgotten: dict[Kind, int] = {}  # the open windows at the last clean-up
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    @classmethod
    def from_settings(
        cls, settings: Settings, factory: sessionmaker[Session] | None = None
    ) -> RateLimiter:
        return cls(
            limits_of(settings),
            factory,
            flush_seconds=settings.rate_limit_flush_seconds,
            trusted_proxies=networks(settings.trusted_proxies),
        )

    # --- on the request path: memory only ---

    def client(self, scope: Mapping[str, Any]) -> str:
        """Who an ASGI request comes from (app/limits/client.py), by the trusted proxies."""
        peer = scope.get("client")
        forwarded = [
            value.decode("latin-1")
            for name, value in scope.get("headers", ())
            if name == b"x-forwarded-for"
        ]
        return client_address(peer[0] if peer else None, forwarded, self.trusted_proxies)

    def admit(self, client: str, key_id: str | None) -> Refusal | None:
        """Count one request from ``client`` (with the key ``key_id``, if a known one) and
        say whether to refuse it: the client is blocked for failed sign-ins, or the client
        or the key is over its request limit. A refused request is not counted."""
        now, limits = self._clock(), self.limits
        counted = [(limits.per_client, client)]
        if key_id is not None:
            counted.append((limits.per_key, key_id))
        with self._lock:
            refusal = self._over(limits.auth_failures, client, now)
            slots = [(limit, slot_of(limit, s[:SUBJECT_LENGTH], now)) for limit, s in counted]
            for limit, slot in slots:
                refusal = refusal or self._over_at(limit, slot, now)
            if refusal is not None:
                return refusal
            for limit, slot in slots:
                if limit.on:
                    add(self._local, slot)
                    add(self._pending, slot)
        return None

    def blocked(self, client: str) -> Refusal | None:
        """Whether ``client`` has failed to sign in too often in this window."""
        with self._lock:
            return self._over(self.limits.auth_failures, client, self._clock())

    def failed(self, client: str) -> None:
        """``client`` presented a key no one knows (or a revoked one)."""
        limit = self.limits.auth_failures
        if limit.on:
            slot = slot_of(limit, client[:SUBJECT_LENGTH], self._clock())
            with self._lock:
                add(self._local, slot)
                add(self._pending, slot)

    def _over(self, limit: Limit, subject: str, now: float) -> Refusal | None:
        """A refusal if one more event would pass ``limit``: a client with as many failed
        sign-ins as allowed is refused anything more, a correct key included."""
        return self._over_at(limit, slot_of(limit, subject[:SUBJECT_LENGTH], now), now)

    def _over_at(self, limit: Limit, slot: Slot, now: float) -> Refusal | None:
        if over(limit, self._local.get(slot, 0), self._remote.get(slot, 0), adding=1):
            return Refusal(limit.kind, seconds_left(now, limit.seconds))
        return None

    def count(self, kind: Kind, subject: str) -> int:
        """The count that decides for ``subject`` now (local + last-known remote)."""
        limit = {lim.kind: lim for lim in self.limits.all()}[kind]
        slot = slot_of(limit, subject[:SUBJECT_LENGTH], self._clock())
        with self._lock:
            return self._local.get(slot, 0) + self._remote.get(slot, 0)

    # --- in the background ---

    def flush(self) -> None:
        """Write this replica's new counts, read the others', forget closed windows.

        Raises what the database raises; the counts not written stay pending."""
        if self._factory is None:
            return
        now = self._clock()
        open_now = open_windows(self.limits.all(), now)
        with self._lock:
            self._local = current_only(self._local.items(), open_now)
            pending, self._pending = current_only(self._pending.items(), open_now), {}
            self._writing = bool(pending)
        try:
            with unit_of_work(self._factory) as session:
                repository.add_counts(session, self.replica, pending)
                remote = repository.others_counts(session, self.replica, open_now)
                if open_now != self._forgotten:  # once per new window, not every flush
                    repository.forget_closed(session, open_now, int(now) - FORGET_SECONDS)
        except BaseException:
            with self._lock:
                merge(self._pending, pending)
                self._remote = {}  # on our own counts until the database answers
                self._writing = False
            raise
        with self._lock:
            self._remote = current_only(remote, open_now)
            self._writing = False
        self._forgotten = open_now

    @property
    def shared(self) -> bool:
        """Whether the last flush worked and every count since is in the table."""
        with self._lock:
            return not (self._failing or self._pending or self._writing)

    def _flush_quietly(self) -> None:
        try:
            self.flush()
        except Exception as exc:
            if not self._failing:
                reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
                log.warning("rate counts not shared (%s); limiting on local counts", reason)
            self._failing = True
        else:
            if self._failing:
                log.info("rate counts are shared again")
            self._failing = False

    def start(self) -> None:
        """Flush every ``flush_seconds`` in a thread (only while some limit is on)."""
        if self._factory is None or not self.limits.on:
            return

        def loop() -> None:
            while not self._stop.wait(self.flush_seconds):
                self._flush_quietly()

        self._thread = threading.Thread(target=loop, name="rate-limits", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread, then hand the last counts to the table (best effort)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
            self._flush_quietly()
