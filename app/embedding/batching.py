"""Coalesce concurrent query embeddings into one model call; routes before bulk writes.

Under load, many requests each want one short text embedded. One forward pass over 16 texts
costs far less than 16 passes over one, so callers queue their text and whoever finds the model
idle becomes the leader: it embeds everything queued, hands each caller its row, and wakes
the rest. Alone, a caller is its own leader at once, so a quiet service pays no extra hop.

Two kinds of callers share the model. A route embeds one step (a handful of texts: the step and
its asks); a registry write embeds cards in bulk (an import of 10,000 cards). Route texts
always go first, and bulk texts run in chunks of ``bulk_batch``. A bulk chunk may use more
model threads (``bulk_threads``) than a route batch (``query_threads``): a long batch gains
from a second core, while short route batches run best on one thread beside the request
threads.

An encoder that may be called from several threads at once (``concurrent = True``: the ONNX
and USE models, which also run without the interpreter lock) gets up to ``parallel`` batches
in flight: while one batch runs on one core, the next is already filling and starts on the
other, instead of every request waiting for one model call at a time. Bulk chunks hold at most
``parallel - 1`` slots, so one is always free or running route texts: a route arriving during
an import waits for no chunk, and its model call has a core of its own (issue 21). With one
slot (torch), a route waits for at most the chunk running.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.embedding.cache import EmbeddingCache
from app.embedding.encoders import Encoder, multilingual_dims

# A call with more texts than this is a bulk write; a route sends its step and at most 8 asks.
INTERACTIVE_TEXTS = 9


class LeaderFollower:
    """Callers queue work; whoever finds a free model slot leads.

    The leader takes a batch (``_take``), runs it outside the lock (``_run``) and wakes
    everyone; the others wait until their own work is done or a slot frees up. At most
    ``parallel`` batches run at once. Subclasses hold the queues.
    """

    parallel = 1

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = 0  # batches being run now

    def _pending(self) -> bool:
        raise NotImplementedError

    def _may_lead(self) -> bool:
        """With ``self._cond`` held: whether a caller may take a batch and run it now."""
        return self._running < self.parallel and self._pending()

    def _ran(self, batch: list[Any]) -> None:
        """With ``self._cond`` held: ``batch`` has run (its slot is free again)."""

    def _take(self) -> list[Any]:
        raise NotImplementedError

    def _run(self, batch: list[Any]) -> None:
        raise NotImplementedError

    def _serve_until(self, finished: Callable[[], bool]) -> None:
        """With ``self._cond`` held: lead or wait until ``finished()``."""
        while not finished():
            if not self._may_lead():
                self._cond.wait()  # no slot for what is queued, or our work is running
                continue
            self._running += 1
            batch = self._take()
            self._cond.release()
            try:
                self._run(batch)
            finally:
                self._cond.acquire()
                self._running -= 1
                self._ran(batch)
                self._cond.notify_all()


@dataclass(eq=False)
class _Slot:
    text: str
    bulk: bool
    row: np.ndarray | None = None
    error: BaseException | None = None
    done: bool = False


class BatchingEncoder(LeaderFollower):
    """An Encoder whose calls are batched with concurrent ones, routes first."""

    def __init__(
        self,
        inner: Encoder,
        max_batch: int = 64,
        bulk_batch: int = 32,
        query_threads: int | None = None,
        bulk_threads: int | None = None,
        parallel: int = 1,
        cache_size: int = 0,
    ) -> None:
        super().__init__()
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.multilingual_dims = multilingual_dims(inner)
        self.max_batch = max_batch
        self.bulk_batch = bulk_batch
        self.query_threads = query_threads
        self.bulk_threads = bulk_threads
        self.parallel = parallel if getattr(inner, "concurrent", False) else 1
        self._queue: list[_Slot] = []  # route texts, in arrival order
        self._bulk: list[_Slot] = []  # bulk texts, in arrival order
        self._bulk_running = 0  # bulk chunks being run now
        # Route texts by exact text (``interactive=True`` callers only); see cache.py.
        self.cache = EmbeddingCache(cache_size)
        # Calls of the inner encoder and the texts they embedded, by kind ("route", "bulk"):
        # /metrics shows them, so a route's model calls are counted, not guessed.
        self.model_calls = {"route": 0, "bulk": 0}
        self.model_texts = {"route": 0, "bulk": 0}
        self._counts = threading.Lock()

    def encode(self, texts: Sequence[str], interactive: bool | None = None) -> np.ndarray:
        """Rows for `texts`, computed in whatever batches the current load makes.

        ``interactive`` says whether they are route texts (first in line) or a bulk write;
        by default a call with more than ``INTERACTIVE_TEXTS`` texts is bulk. Route texts
        (``interactive=True``) are looked up in the cache first, and the others added to it.
        """
        if interactive and self.cache.size and texts:
            return self._cached(texts)
        return self._encode(texts, interactive)

    def _cached(self, texts: Sequence[str]) -> np.ndarray:
        """Rows of held texts from the cache; the others embedded (one call) and held."""
        held = [self.cache.get(text) for text in texts]
        missing = [i for i, row in enumerate(held) if row is None]
        if missing:
            unique = list(dict.fromkeys(texts[i] for i in missing))
            rows = dict(zip(unique, self._encode(unique, True), strict=True))
            for text, row in rows.items():
                self.cache.put(text, row)
            for i in missing:
                held[i] = rows[texts[i]]
        return np.stack([row for row in held if row is not None]).astype(np.float32)

    def _encode(self, texts: Sequence[str], interactive: bool | None) -> np.ndarray:
        bulk = len(texts) > INTERACTIVE_TEXTS if interactive is None else not interactive
        if not texts:
            return self.inner.encode([])
        if not bulk and len(texts) <= self.max_batch:
            with self._cond:  # alone, with a model slot free: embed now, without queueing
                alone = not self._queue and self._running < self.parallel
                self._running += alone
            if alone:
                try:
                    return self._embed(list(texts), bulk=False)
                finally:
                    with self._cond:
                        self._running -= 1
                        self._cond.notify_all()
        slots = [_Slot(text, bulk) for text in texts]
        with self._cond:
            if bulk:  # chunks of similar lengths pad less; rows are read back from `slots`
                self._bulk.extend(sorted(slots, key=lambda slot: len(slot.text)))
            else:
                self._queue.extend(slots)
            self._serve_until(lambda: all(slot.done for slot in slots))
        for slot in slots:
            if slot.error is not None:
                raise slot.error
        return np.stack([slot.row for slot in slots if slot.row is not None])

    @property
    def bulk_slots(self) -> int:
        """Bulk chunks that may run at once: all slots but one, which is left to routes."""
        return max(1, self.parallel - 1)

    def _pending(self) -> bool:
        return bool(self._queue or self._bulk)

    def _may_lead(self) -> bool:
        if self._running >= self.parallel:
            return False
        return bool(self._queue) or (bool(self._bulk) and self._bulk_running < self.bulk_slots)

    def _ran(self, batch: list[_Slot]) -> None:
        self._bulk_running -= batch[0].bulk

    def _take(self) -> list[_Slot]:
        """The next batch: every waiting route text (up to max_batch), else one bulk chunk."""
        if self._queue:
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
        else:
            batch, self._bulk = self._bulk[: self.bulk_batch], self._bulk[self.bulk_batch :]
            self._bulk_running += 1
        return batch

    def _embed(self, texts: list[str], bulk: bool) -> np.ndarray:
        # Bulk chunks use bulk_threads when calls run one at a time (torch); an encoder with
        # parallel batches gets its cores from them instead (app/tools/catalog.py::CardEmbedding).
        threads = self.bulk_threads if bulk and self.parallel == 1 else self.query_threads
        set_threads = getattr(self.inner, "set_threads", None)
        if threads is not None and set_threads is not None:
            set_threads(threads)
        kind = "bulk" if bulk else "route"
        with self._counts:
            self.model_calls[kind] += 1
            self.model_texts[kind] += len(texts)
        return np.asarray(self.inner.encode(texts))

    def _run(self, batch: list[_Slot]) -> None:
        try:
            rows = self._embed([slot.text for slot in batch], batch[0].bulk)
        except BaseException as exc:  # every caller in the batch sees the failure
            for slot in batch:
                slot.error, slot.done = exc, True
            return
        for slot, row in zip(batch, rows, strict=True):
            slot.row, slot.done = row, True
