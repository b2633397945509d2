"""Coalesce concurrent query embeddings into one model call.

Under load, many requests each want one short text embedded. One forward pass over 16 texts
costs far less than 16 passes over one, so callers queue their text and whoever finds the model
idle becomes the leader: it embeds everything queued, hands each caller its row, and wakes
the rest. Alone, a caller is its own leader at once, so a quiet service pays no extra hop.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.encoders import Encoder


@dataclass(eq=False)
class _Slot:
    text: str
    row: np.ndarray | None = None
    error: BaseException | None = None
    done: bool = False


class BatchingEncoder:
    """An Encoder whose single-text calls are batched with concurrent ones."""

    def __init__(self, inner: Encoder, max_batch: int = 64) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.max_batch = max_batch
        self._cond = threading.Condition()
        self._queue: list[_Slot] = []
        self._busy = False

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Rows for `texts`, computed in whatever batches the current load makes."""
        slots = [_Slot(text) for text in texts]
        if not slots:
            return self.inner.encode([])
        with self._cond:
            self._queue.extend(slots)
            while not all(slot.done for slot in slots):
                if self._busy:
                    self._cond.wait()
                    continue
                self._busy = True
                batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
                self._cond.release()
                try:
                    self._run(batch)
                finally:
                    self._cond.acquire()
                    self._busy = False
                    self._cond.notify_all()
        for slot in slots:
            if slot.error is not None:
                raise slot.error
        return np.stack([slot.row for slot in slots if slot.row is not None])

    def _run(self, batch: list[_Slot]) -> None:
        try:
            rows = self.inner.encode([slot.text for slot in batch])
        except BaseException as exc:  # every caller in the batch sees the failure
            for slot in batch:
                slot.error, slot.done = exc, True
            return
        for slot, row in zip(batch, rows, strict=True):
            slot.row, slot.done = row, True
