"""Route texts already embedded, by their exact text: an agent that repeats a step pays no
model call for it.

Bounded (least recently used out first) and shared by every thread of the process. A row is
what the encoder gave that text alone or in a batch, which is the same row for the service's
encoders (app/embedding/batching.py), so a hit answers exactly as a miss would. Only route
texts go through it: a card's text is embedded once, when it is written.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np


class EmbeddingCache:
    """At most ``size`` rows by text (0: off); counts its hits and misses."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.hits = 0
        self.misses = 0
        self._rows: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, text: str) -> np.ndarray | None:
        """The row of ``text`` if it is held (a hit, made the most recent), else None (a miss)."""
        if not self.size:
            return None
        with self._lock:
            row = self._rows.get(text)
            if row is None:
                self.misses += 1
                return None
            self._rows.move_to_end(text)
            self.hits += 1
            return row

    def put(self, text: str, row: np.ndarray) -> None:
        """Hold a read-only copy of ``row`` for ``text``, dropping the least recent past
        ``size``."""
        if not self.size:
            return
        kept = np.array(row, dtype=np.float32, copy=True)
        kept.flags.writeable = False
        with self._lock:
            self._rows[text] = kept
            self._rows.move_to_end(text)
            while len(self._rows) > self.size:
                self._rows.popitem(last=False)
