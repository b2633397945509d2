"""Postgres notifications for this process: one thread, one direct connection, ``LISTEN``.

A write announces its new registry revision with ``NOTIFY`` in its own transaction
(``registry.repository.next_revision``), so every replica hears of it at commit and syncs its
index at once, instead of at its next poll (``TOOLREACH_INDEX_POLL_SECONDS``, which stays as
the fallback). Feedback for a route another replica answered asks that replica, the same way,
to write its route events now (``app/loop/feedback.py``).

``LISTEN`` belongs to a server session, so the connection is its own, never one of the pool's
(behind a transaction-mode PgBouncer, ``TOOLREACH_LISTEN_DATABASE_URL`` points straight at
Postgres: docs/DEPLOY.md). When it drops (a database restart, a network cut), the thread
reconnects with a growing pause, and after each connect tells its ``on_connect`` hook: a
notification sent while nobody listened is lost, so the index syncs once to catch up.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping

import psycopg
from psycopg import sql

log = logging.getLogger("toolreach.listener")


def psycopg_url(url: str) -> str:
    """A SQLAlchemy Postgres URL as libpq takes it (without the ``+psycopg`` driver name)."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


class Listener:
    """Calls ``handlers[channel](payload)`` for each notification on its channels, from its
    own thread; a handler must be quick (wake a thread, set a flag)."""

    def __init__(
        self,
        url: str,
        handlers: Mapping[str, Callable[[str], None]],
        on_connect: Callable[[], None] = lambda: None,
        retry_max_seconds: float = 30.0,
    ) -> None:
        self.url = psycopg_url(url)
        self.handlers = dict(handlers)
        self.on_connect = on_connect
        self.retry_max_seconds = retry_max_seconds
        self.connected = threading.Event()
        self.connects = 0  # successful connects so far (the first one included)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="pg-listener", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop listening (within the second the thread waits for notifications at most)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        pause = 0.5
        while not self._stop.is_set():
            try:
                self._listen()
                pause = 0.5
            except Exception as exc:
                self.connected.clear()
                if self._stop.is_set():
                    return
                log.warning(
                    "notifications lost (%s); reconnecting in %.1f s (the poll goes on)",
                    type(exc).__name__,
                    pause,
                )
                self._stop.wait(pause)
                pause = min(pause * 2, self.retry_max_seconds)

    def _listen(self) -> None:
        # TCP keepalives: a cut without a reset (a dead host) is noticed in ~11 s.
        with psycopg.connect(
            self.url,
            autocommit=True,
            application_name="toolreach-listener",
            connect_timeout=5,
            keepalives=1,
            keepalives_idle=5,
            keepalives_interval=2,
            keepalives_count=3,
        ) as conn:
            for channel in self.handlers:
                conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
            self.connects += 1
            self.connected.set()
            if self.connects > 1:
                log.warning("listening for notifications again")
            self.on_connect()
            while not self._stop.is_set():
                for note in conn.notifies(timeout=1.0):
                    self._dispatch(note.channel, note.payload)
                conn.execute("SELECT 1")  # a closed connection raises here, not in silence

    def _dispatch(self, channel: str, payload: str) -> None:
        handler = self.handlers.get(channel)
        if handler is None:
            return
        try:
            handler(payload)
        except Exception:
            log.exception("a notification on %s was not handled", channel)
