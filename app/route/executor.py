"""Routes under load: one queue, a few worker threads, one model call per batch of requests.

``POST /v1/route`` is an ``async`` endpoint that hands its request to this executor and awaits
the answer. Each worker takes every request waiting (up to ``max_batch``), embeds all their
texts in one encoder call (route texts go before bulk card writes: app/embedding/batching.py),
routes each request with those vectors (``route_step``: ranked, shaped, recorded), and
resolves each request's future on its event loop.

Why not a thread per request (FastAPI's default for a plain ``def`` endpoint): with 16 clients,
16 pool threads each ran their own route and contended for the interpreter lock, and a
request's model call batched only with whoever happened to be waiting at that moment. Here
the threads are the event loop plus ``workers``, and the queue is the batch. Measured at
10,000 tools in docs/BENCHMARKS.md ("What limits throughput").

One batch is ranked at a time. A model call releases the interpreter lock and the ranking
holds it, so a second worker overlaps its model call with another batch's ranking; two
rankings at once only traded the lock back and forth (docs/BENCHMARKS.md, "The int8 first
pass from 3,000 tools, and one ranking at a time").

The queue is bounded (``max_queue``): past it a step is refused at once with 503
``overloaded`` and ``Retry-After``, instead of every later step waiting longer and longer
while the clients time out. A refused step did no work, so a retry is safe.

``route_many`` queues several steps of one request (``POST /v1/route/batch``, MCP
``search_tools`` with ``queries``) as one group: a worker takes a group whole, so its steps
share one model call, and each is still answered and recorded on its own.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass

import numpy as np

from app.embedding.batching import BatchingEncoder
from app.errors import Overloaded, Unavailable
from app.route.deps import RouteDeps
from app.route.service import EmbeddedStep, route_step, step_texts
from app.routing.signals import Cosines, unit_rows
from app.schemas import RouteRequest, RouteResponse

log = logging.getLogger(__name__)


@dataclass(eq=False)
class _Job:
    request: RouteRequest
    future: asyncio.Future[RouteResponse]
    loop: asyncio.AbstractEventLoop
    started: float
    group: object | None = None  # the steps of one batch request share one
    key_id: str | None = None  # the caller's key (app/loop/trust.py)


def _settle(job: _Job, response: RouteResponse | None, error: BaseException | None) -> None:
    """On the job's event loop: give the awaiting endpoint its answer (unless it left)."""
    if job.future.done():  # the client went away and the request was cancelled
        return
    if error is not None:
        job.future.set_exception(error)
    else:
        job.future.set_result(response)  # type: ignore[arg-type]


class RouteExecutor:
    def __init__(
        self, deps: RouteDeps, workers: int = 2, max_batch: int = 8, max_queue: int = 0
    ) -> None:
        self._deps = deps
        self._workers = workers
        self.max_batch = max_batch
        self.max_queue = max_queue  # 0: no limit
        self._queue: list[_Job] = []
        self._cond = threading.Condition()
        # One batch ranked at a time: the ranking is interpreter-bound, so two workers ranking
        # at once only hand the interpreter lock back and forth; a model call (which releases
        # it) still overlaps another batch's ranking.
        self._ranking = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._stopping = False

    def start(self) -> None:
        for n in range(self._workers):
            thread = threading.Thread(target=self._work, name=f"route-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """Answer what is queued with 503, let the batches in hand finish, end the threads."""
        with self._cond:
            self._stopping = True
            left, self._queue = self._queue, []
            self._cond.notify_all()
        for job in left:
            self._post(job, None, Unavailable("the service is shutting down"))
        for thread in self._threads:
            thread.join(timeout=30)
        self._threads = []

    async def route(self, request: RouteRequest, key_id: str | None = None) -> RouteResponse:
        """The answer to one step, from the next batch a worker takes; ``key_id``: the
        caller's key (its own reports weigh fully: app/loop/trust.py)."""
        return (await self.route_many([request], key_id))[0]

    async def route_many(
        self, requests: list[RouteRequest], key_id: str | None = None
    ) -> list[RouteResponse]:
        """The answers to several steps, in order, from one batch (one model call): each
        step is ranked and recorded on its own. Refused whole when the queue cannot take
        them all."""
        loop = asyncio.get_running_loop()
        started, group = time.perf_counter(), object() if len(requests) > 1 else None
        jobs = [_Job(r, loop.create_future(), loop, started, group, key_id) for r in requests]
        with self._cond:
            if self._stopping or not self._threads:
                raise Unavailable("the router is not running")
            waiting = len(self._queue)
            if self.max_queue and waiting + len(jobs) > self.max_queue:
                self._deps.metrics.routes_refused.inc(len(jobs))
                raise Overloaded(
                    f"the route queue is full (limit {self.max_queue}); retry shortly",
                    {"waiting": waiting, "limit": self.max_queue},
                )
            self._queue.extend(jobs)
            self._cond.notify()
        try:
            return list(await asyncio.gather(*(job.future for job in jobs)))
        finally:
            for job in jobs:  # the client left, or a step failed: the others need no answer
                job.future.cancel()

    def _batch_size(self) -> int:
        """``max_batch`` steps, or more so as not to split a group (its steps share one
        model call)."""
        size = min(self.max_batch, len(self._queue))
        last = self._queue[size - 1].group
        while last is not None and size < len(self._queue) and self._queue[size].group is last:
            size += 1
        return size

    def waiting(self) -> int:
        """Steps queued and not yet taken by a worker."""
        return len(self._queue)

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if not self._queue:
                    return
                size = self._batch_size()
                batch = self._queue[:size]
                del self._queue[:size]
            # A client that went away while its step waited: no model call, no route event.
            batch = [job for job in batch if not job.future.cancelled()]
            if batch:
                self._run(batch)

    def _run(self, batch: list[_Job]) -> None:
        try:
            texts = [step_texts(job.request, self._deps.index) for job in batch]
            started = time.perf_counter()
            flat = [t for group in texts for t in group]
            rows = self._embed(flat) if flat else np.zeros((0, 0), dtype=np.float32)
            embed = time.perf_counter() - started
        except BaseException as exc:  # every request of the batch sees the model's failure
            for job in batch:
                self._post(job, None, exc)
            return
        offset, vectors = 0, []
        for group in texts:
            vectors.append(rows[offset : offset + len(group)] if group else None)
            offset += len(group)
        with self._ranking:
            self._rank(batch, texts, vectors, embed)

    def _rank(
        self,
        batch: list[_Job],
        texts: list[list[str]],
        vectors: list[np.ndarray | None],
        embed: float,
    ) -> None:
        try:
            products = self._shared_products(batch, vectors)
        except Exception:  # each step then makes its own product
            log.exception("a batch's shared cosine product failed")
            products = {}
        for i, job in enumerate(batch):
            try:
                step = EmbeddedStep(texts[i], vectors[i], embed, products.get(i))
                response = route_step(
                    job.request, self._deps, step=step, started=job.started, key_id=job.key_id
                )
            except BaseException as exc:  # this request's failure only
                self._post(job, None, exc)
            else:
                self._post(job, response, None)

    def _shared_products(
        self, batch: list[_Job], vectors: list[np.ndarray | None]
    ) -> dict[int, Cosines]:
        """For steps of one namespace whose tool matrix is int8-prepared: one product for
        all of them (the matrix read once), as a ``Cosines`` per step (by batch position)."""
        cosines = self._deps.cosines
        groups: dict[int, tuple[np.ndarray, list[int], list[np.ndarray]]] = {}
        for i, (job, vec) in enumerate(zip(batch, vectors, strict=True)):
            snapshot = self._deps.index.get(job.request.namespace)
            if vec is None or snapshot is None or not cosines.prepared(snapshot.index.embeddings):
                continue
            matrix = snapshot.index.embeddings
            unit = unit_rows(vec, len(vec), matrix.shape[1])
            if unit is not None:
                group = groups.setdefault(id(matrix), (matrix, [], []))
                group[1].append(i)
                group[2].append(unit)
        out: dict[int, Cosines] = {}
        for matrix, positions, units in groups.values():
            if len(positions) > 1:
                out.update(zip(positions, cosines.shared(matrix, units), strict=True))
        return out

    def _embed(self, texts: list[str]) -> np.ndarray:
        encoder = self._deps.encoder
        if isinstance(encoder, BatchingEncoder):  # route texts, however many: first in line
            return np.asarray(encoder.encode(texts, interactive=True), dtype=np.float32)
        return np.asarray(encoder.encode(texts), dtype=np.float32)

    @staticmethod
    def _post(job: _Job, response: RouteResponse | None, error: BaseException | None) -> None:
        try:
            job.loop.call_soon_threadsafe(_settle, job, response, error)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            log.debug("route answered after its event loop closed")
