"""Whether the database answers: a background probe, one at a time, and every timeout seen.

`DatabaseHealth` is the engine's gate (app/db.py). A wait that times out anywhere marks the
database stalled; from then on, new database work is refused at once (`DatabaseUnavailable`,
a 503) instead of each request waiting out its own timeout. A probe thread asks the
database every second on a connection of its own, which cannot queue behind the pool, with
the connect timeout as its deadline, so at most one probe ever waits on a sick database.
Its first answer reopens the gate. Readiness (/readyz) reads this state and never waits.

A process that does not start the probe (the command line) is never refused: nothing would
reopen the gate. Its waits are still bounded.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from app.db import DatabaseUnavailable, timed_out

log = logging.getLogger("toolreach.database")

PROBE_SECONDS = 1.0


class Probe(Protocol):
    def __call__(self) -> None: ...  # raises if the database does not answer

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class DatabaseState:
    reachable: bool
    since: datetime  # when it last changed
    error: str | None  # why it is not reachable


def _reason(exc: BaseException) -> str:
    """The first line of the driver's message (or of the exception's), or its class name."""
    cause = getattr(exc, "orig", None) or exc
    lines = str(cause).strip().splitlines()
    return lines[0][:300] if lines else type(cause).__name__


class DatabaseHealth:
    """Reachable or not, and whether to refuse new work now (stalled: it stopped answering)."""

    def __init__(self, probe: Probe | None = None, interval: float = PROBE_SECONDS) -> None:
        self.probe, self.interval = probe, interval
        self._state = DatabaseState(True, datetime.now(UTC), None)  # built after a start-up
        self._stalled = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def state(self) -> DatabaseState:
        return self._state

    def check(self) -> None:
        """Raise `DatabaseUnavailable` while stalled (only once the probe runs to reopen)."""
        if self._stalled and self._thread is not None:
            raise DatabaseUnavailable(f"the database is not answering: {self._state.error}")

    def stalled(self, reason: str) -> None:
        """A wait on the database timed out."""
        self._set(False, reason, stalled=True)

    def probe_once(self) -> bool:
        """Ask the database once; True if it answered."""
        assert self.probe is not None
        try:
            self.probe()
        except Exception as exc:
            self._set(False, _reason(exc), stalled=timed_out(exc) or None)
            return False
        self._set(True, None, stalled=False)
        return True

    def _set(self, reachable: bool, error: str | None, *, stalled: bool | None) -> None:
        """``stalled`` None: as it was."""
        with self._lock:
            before = self._state
            since = before.since if before.reachable == reachable else datetime.now(UTC)
            self._state = DatabaseState(reachable, since, error)
            if stalled is not None:
                self._stalled = stalled
        if before.reachable and not reachable:
            log.warning("the database is not reachable: %s", error)
        elif reachable and not before.reachable:
            down = (self._state.since - before.since).total_seconds()
            log.warning("the database answers again, after %.1f s", down)

    def start(self) -> None:
        """Probe every `interval` seconds in a thread, off the request path."""
        if self.probe is None:
            return

        def loop() -> None:
            while not self._stop.wait(self.interval):
                self.probe_once()

        self._thread = threading.Thread(target=loop, name="database-probe", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)  # a probe in flight ends by its deadline
            self._thread = None
        if self.probe is not None:
            self.probe.close()
