"""The card doctor's room: each namespace's advice computed off the request path, on one
thread of its own, and cached (issue 38 item 3).

A computation routes every reported step again per finding: seconds to minutes, depending on
the reports. So no request computes it: ``GET /v1/advice`` and the dashboard's advice page
ask the room (``request``), which answers the namespace's cached advice while it is fresh
(the same cards, younger than ``fresh_seconds``), or starts one computation that every caller
of the namespace shares. The request waits for it up to ``wait_seconds`` without a database
connection (the computation reads the reports in one short transaction and holds none while
it replays), then answers what there is, marked ``computing``. Bounds, each refused at once:

- a key has at most ``per_key`` requests waiting (past it: 429, ``TooManyRequests``);
- at most ``queue`` namespaces wait for the thread (past it: 503, ``Overloaded``);
- a computation stops when its budget (``seconds``) runs out, and at once on ``stop``: the
  service's shutdown ends it at its next route, and drops the queued ones.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy.orm import Session, sessionmaker

from app.advice import service
from app.advice.service import Advice, Budget
from app.embedding.encoders import Encoder
from app.errors import Overloaded, TooManyRequests
from app.tools.live_index import IndexManager, Snapshot

T = TypeVar("T")
CACHED = 64  # namespaces whose advice is kept


@dataclass(frozen=True)
class Cached:
    advice: Advice
    snapshot: Snapshot  # the cards it was computed on
    at: float  # time.monotonic() when it was done


class AdviceRoom:
    """Each namespace's advice: computed on one thread, cached, shared by its callers."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        index: IndexManager,
        encoder: Encoder,
        trust_keys: int,
        *,
        seconds: float = 30.0,
        fresh_seconds: float = 30.0,
        wait_seconds: float = 10.0,
        per_key: int = 2,
        queue: int = 8,
    ) -> None:
        self._factory, self._index, self._encoder = factory, index, encoder
        self.trust_keys = trust_keys
        self.fresh_seconds, self.wait_seconds = fresh_seconds, wait_seconds
        self.per_key, self.queue = per_key, queue
        self.budget = Budget(seconds)  # its stop event is the room's
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="advice")
        self._jobs: dict[str, Future[Advice]] = {}
        self._cache: OrderedDict[str, Cached] = OrderedDict()
        self._waiting: Counter[str | None] = Counter()
        self._lock = threading.Lock()
        self.computations = 0  # computations started by this room (tests read it)

    def cached(self, namespace: str) -> Advice | None:
        """The namespace's last advice, fresh or not (None: none computed)."""
        with self._lock:
            hit = self._cache.get(namespace)
        return None if hit is None else hit.advice

    def _fresh(self, namespace: str) -> Advice | None:
        hit = self._cache.get(namespace)
        if hit is None or hit.snapshot is not self._index.get(namespace):
            return None
        return hit.advice if time.monotonic() - hit.at <= self.fresh_seconds else None

    def request(self, namespace: str) -> Future[Advice]:
        """The namespace's advice: done at once when fresh, else the computation under way or
        a new one (Overloaded when ``queue`` namespaces wait already)."""
        with self._lock:
            fresh = self._fresh(namespace)
            if fresh is not None:
                done: Future[Advice] = Future()
                done.set_result(fresh)
                return done
            job = self._jobs.get(namespace)
            if job is not None:
                return job
            if len(self._jobs) >= self.queue:
                raise Overloaded(
                    f"the card doctor has {self.queue} namespaces to compute; retry shortly",
                    {"advice_queue": self.queue},
                )
            job = self._pool.submit(self._compute, namespace)
            self._jobs[namespace] = job
            self.computations += 1
            return job

    def _compute(self, namespace: str) -> Advice:
        try:
            advice = service.advise(
                self._factory, self._index, self._encoder, namespace, self.trust_keys, self.budget
            )
            snapshot = self._index.get(namespace)
            with self._lock:
                if snapshot is not None and not self.budget.stop.is_set():
                    self._cache[namespace] = Cached(advice, snapshot, time.monotonic())
                    self._cache.move_to_end(namespace)
                    while len(self._cache) > CACHED:
                        self._cache.popitem(last=False)
            return advice
        finally:
            with self._lock:
                self._jobs.pop(namespace, None)

    def apply(self, namespace: str, advice_id: str) -> Future[list[dict[str, Any]]]:
        """Apply one finding on the room's thread (replayed again first, then written and the
        index synced); the namespace's cached advice is dropped."""
        with self._lock:
            self._cache.pop(namespace, None)
        return self._pool.submit(self._apply, namespace, advice_id)

    def _apply(self, namespace: str, advice_id: str) -> list[dict[str, Any]]:
        written = service.apply(
            self._factory,
            self._index,
            self._encoder,
            namespace,
            advice_id,
            self.trust_keys,
            self.budget,
        )
        self._index.sync()  # this replica routes with the new versions at once
        return written

    @contextmanager
    def waiting(self, key_id: str | None) -> Iterator[None]:
        """Hold one of the key's ``per_key`` waits for the block (TooManyRequests when none
        is free: nothing was done, retry)."""
        with self._lock:
            if self._waiting[key_id] >= self.per_key:
                raise TooManyRequests(
                    f"this key already waits for {self.per_key} advice answers; retry shortly",
                    retry_after=1,
                    details={"advice_waits_per_key": self.per_key},
                )
            self._waiting[key_id] += 1
        try:
            yield
        finally:
            with self._lock:
                self._waiting[key_id] -= 1
                if not self._waiting[key_id]:
                    del self._waiting[key_id]

    def stop(self) -> None:
        """End the running computation at its next route and drop the queued ones."""
        self.budget.stop.set()
        self._pool.shutdown(wait=False, cancel_futures=True)


async def waited(job: Future[T], seconds: float) -> T | None:
    """``job``'s result once done, waiting up to ``seconds`` on the event loop, holding no
    thread; None when not done by then."""
    done, _ = await asyncio.wait({asyncio.wrap_future(job)}, timeout=seconds)
    return finished(job) if done else None


async def outcome(job: Future[T]) -> T:
    """``job``'s result, however long it takes (its budget bounds it), holding no thread."""
    await asyncio.wait({asyncio.wrap_future(job)})
    return finished(job)


def finished(job: Future[T]) -> T:
    """A done job's result (its error raised; dropped at a stop: Overloaded, retry)."""
    if job.cancelled():
        raise Overloaded("the service is stopping; retry on another replica", {})
    return job.result()
