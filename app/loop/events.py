"""Route events: recorded off the request path by one background writer, in batches.

A route hands its event to :meth:`EventWriter.submit` (a dict insert under a lock) and
answers at once. The writer thread wakes every ``flush_seconds`` (sooner when a batch is
full) and inserts what is buffered. While the database is down it keeps the events, retries
with exponential backoff up to ``retry_max_seconds``, and once the buffer holds
``buffer_size`` events it drops the oldest, counting each one in :attr:`dropped`. Events not
yet written stay findable by route id (:meth:`pending`), so feedback may arrive first.

Other bookkeeping that must not wait on the database (the calls ``/v1/validate`` records)
joins this thread with :meth:`EventWriter.also_write`: written after the events, retried
with them.

A batch the database refuses for its data (a value it cannot store) is written again one
event at a time, so one bad event is dropped, counted and logged instead of holding back
every event behind it for ever.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.exc import DataError, IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from app.db import unit_of_work
from app.loop import repository as event_repository

log = logging.getLogger("toolreach.events")


# A route id is 12 hex digits of the time it was made (ms since the epoch), then this many
# random bytes in hex (app/route/answer.py makes them).
TIME_DIGITS = 12
RANDOM_BYTES = 10


def route_id_time(route_id: str) -> float | None:
    """When a route id was made (seconds since the epoch); ``None`` for an id of another
    shape (one made before ids carried their time, or made up)."""
    if len(route_id) != TIME_DIGITS + 2 * RANDOM_BYTES:
        return None
    try:
        int(route_id, 16)
    except ValueError:
        return None
    return int(route_id[:TIME_DIGITS], 16) / 1000


def stored_query(query: str, *, hashed: bool) -> str:
    """The query as stored: its text, or ``sha256:<hex>`` when queries are kept private."""
    return "sha256:" + hashlib.sha256(query.encode()).hexdigest() if hashed else query


@dataclass(frozen=True, slots=True)
class RouteEventCandidateRecord:
    """One tool a route offered, as the writer will store it (a ``route_candidates`` row)."""

    name: str
    score: float
    stages: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class RouteEventRecord:
    """One route answer, as the writer will store it (a ``route_events`` row and its
    candidates' rows)."""

    route_id: str
    created_at: datetime
    namespace: str
    query: str  # already hashed if the settings say so
    k: int
    latency_ms: float
    model: str
    candidates: tuple[RouteEventCandidateRecord, ...]
    weights: Mapping[str, Any] = field(default_factory=dict)
    key_id: str | None = None  # the key that asked for the route

    @property
    def candidate_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.candidates)

    def event_row(self) -> dict[str, Any]:
        return {
            "id": self.route_id,
            "created_at": self.created_at,
            "namespace": self.namespace,
            "query": self.query,
            "k": self.k,
            "latency_ms": self.latency_ms,
            "model": self.model,
            "weights": dict(self.weights),
            "key_id": self.key_id,
        }

    def candidate_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "route_id": self.route_id,
                "rank": rank,
                "name": c.name,
                "score": c.score,
                "stages": dict(c.stages),
            }
            for rank, c in enumerate(self.candidates, start=1)
        ]


class EventWriter:
    """A bounded buffer of route events and the thread that writes it to the database."""

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        *,
        buffer_size: int = 10_000,
        batch_size: int = 500,
        flush_seconds: float = 1.0,
        retry_max_seconds: float = 30.0,
    ) -> None:
        self._factory = session_factory
        self.buffer_size = buffer_size
        self.batch_size = batch_size
        self.flush_seconds = flush_seconds
        self.retry_max_seconds = retry_max_seconds
        self._queue: OrderedDict[str, RouteEventRecord] = OrderedDict()
        self._inflight: dict[str, RouteEventRecord] = {}
        self._lock = threading.Lock()  # guards the two dicts and the counters
        self._write_lock = threading.Lock()  # one batch at a time: thread or flush()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._dropped = 0
        self._written = 0
        self._also: list[Callable[[], int]] = []

    @property
    def dropped(self) -> int:
        """Events lost since start: the oldest when the buffer was full, and any the database
        refused for its data."""
        return self._dropped

    @property
    def written(self) -> int:
        return self._written

    @property
    def buffered(self) -> int:
        with self._lock:
            return len(self._queue) + len(self._inflight)

    def also_write(self, write: Callable[[], int]) -> None:
        """Run ``write`` after the events at each flush; like the events, what it cannot
        write now it keeps, and it raises so that the thread backs off and retries."""
        self._also.append(write)

    def submit(self, record: RouteEventRecord) -> None:
        """Buffer one event; never blocks on the database."""
        with self._lock:
            self._queue[record.route_id] = record
            self._trim()
            full = len(self._queue) >= self.batch_size
        if full:
            self._wake.set()

    def write_soon(self, route_id: str) -> None:
        """Write now if ``route_id``'s event is still buffered here (another replica has
        feedback for it: app/loop/feedback.py)."""
        if self.pending(route_id) is not None:
            self._wake.set()

    def pending(self, route_id: str) -> RouteEventRecord | None:
        """An event still in the buffer (or being written), by route id."""
        with self._lock:
            return self._queue.get(route_id) or self._inflight.get(route_id)

    def _trim(self) -> None:
        overflow = len(self._queue) - self.buffer_size
        if overflow <= 0:
            return
        for _ in range(overflow):
            self._queue.popitem(last=False)
        before, self._dropped = self._dropped, self._dropped + overflow
        if before == 0 or before // 1000 != self._dropped // 1000:  # log, but not every drop
            log.warning("route event buffer full: %d oldest events dropped so far", self._dropped)

    def write_batch(self) -> int:
        """Write up to one batch; returns how many events left the buffer (written, or
        refused for their data); on any other failure the batch goes back to the front and
        this raises."""
        return self._write_batch()[0]

    def _write_batch(self) -> tuple[int, int]:
        """``write_batch``'s work: (events that left the buffer, events written)."""
        with self._write_lock:
            with self._lock:
                batch = [self._queue.popitem(last=False)[1] for _ in range(self._take())]
                self._inflight = {r.route_id: r for r in batch}
            if not batch:
                return 0, 0
            try:
                with unit_of_work(self._factory) as session:
                    event_repository.insert_events(session, batch)
            except (DataError, IntegrityError):
                return len(batch), self._write_one_by_one(batch)
            except Exception:
                self._requeue(batch)
                raise
            with self._lock:
                self._inflight = {}
                self._written += len(batch)
            return len(batch), len(batch)

    def _write_one_by_one(self, batch: list[RouteEventRecord]) -> int:
        """A refused batch, event by event: the ones refused for their data are dropped; on
        any other failure the rest goes back to the front of the buffer and this raises.
        Returns how many were written."""
        written, refused = 0, []
        for i, record in enumerate(batch):
            try:
                with unit_of_work(self._factory) as session:
                    event_repository.insert_events(session, [record])
            except (DataError, IntegrityError):
                refused.append(record.route_id)
            except Exception:
                self._requeue(batch[i:])
                self._count(written, refused)
                raise
            else:
                written += 1
        with self._lock:
            self._inflight = {}
        self._count(written, refused)
        return written

    def _count(self, written: int, refused: list[str]) -> None:
        with self._lock:
            self._written += written
            self._dropped += len(refused)
        if refused:
            log.error(
                "the database refused %d route event(s) for their data; dropped: %s",
                len(refused),
                ", ".join(refused[:10]),
            )

    def _take(self) -> int:
        return min(self.batch_size, len(self._queue))

    def _requeue(self, batch: list[RouteEventRecord]) -> None:
        with self._lock:
            queue = OrderedDict((r.route_id, r) for r in batch)
            queue.update(self._queue)
            self._queue = queue
            self._inflight = {}
            self._trim()

    def flush(self) -> int:
        """Write until the buffer is empty, then what joined it (``also_write``), in the
        caller's thread; returns how many events were written.

        If the database fails, this raises, and what was not written stays buffered.
        """
        total = 0
        while True:
            taken, written = self._write_batch()
            if not taken:
                break
            total += written
        for write in self._also:
            write()
        return total

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="route-events", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        backoff = self.flush_seconds
        while not self._stop.is_set():
            self._wake.wait(self.flush_seconds)
            self._wake.clear()
            try:
                self.flush()
                backoff = self.flush_seconds
            except Exception as exc:
                backoff = min(backoff * 2, self.retry_max_seconds)
                log.warning(
                    "cannot write route events (%s); %d buffered, retrying in %.1fs",
                    type(exc).__name__,
                    self.buffered,
                    backoff,
                )
                self._stop.wait(backoff)

    def stop(self) -> None:
        """Stop the thread, then write what is left; a clean stop loses nothing."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        try:
            self.flush()
        except Exception:
            log.exception("route events lost at shutdown: %d", self.buffered)
