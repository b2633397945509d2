"""Concurrency slots: at most a few expensive requests of each kind at once per process.

An expensive request holds a slot of its kind from before its work starts until its answer
is sent (a streamed answer: until its last line). One more, while every slot is held, is
refused at once with 503 ``overloaded`` and ``Retry-After``: nothing was done, so a retry is
safe, and no request waits behind it, so routes and cheap reads keep their latency. The
kinds (docs/CONFIGURATION.md, "Capacity", lists every endpoint and why):

- ``reports``: statistics over the route events (SQL aggregates that grow with traffic) and
  the pages and look-alikes shown beside them;
- ``imports``: bulk imports and source syncs (a model call per card, one long write
  transaction holding the registry's write lock, remote documents fetched and parsed);
- ``exports``: listing or exporting up to 500 cards a page, read and converted.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, Request

from app.errors import Overloaded

SlotKind = Literal["reports", "imports", "exports"]
WHAT: dict[SlotKind, str] = {
    "reports": "statistics and look-alike requests",
    "imports": "imports and source syncs",
    "exports": "tool listings and exports",
}


class SlotPool:
    """``size`` slots, taken without waiting (from the event loop or a thread alike)."""

    def __init__(
        self, kind: SlotKind, size: int, on_refused: Callable[[SlotKind], None] | None = None
    ) -> None:
        self.kind, self.size = kind, size
        self._on_refused = on_refused  # counts the refusals (a metric)
        self._held = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        return self._held

    def _take(self) -> bool:
        with self._lock:
            if self._held >= self.size:
                return False
            self._held += 1
            return True

    def _give_back(self) -> None:
        with self._lock:
            self._held -= 1

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold a slot for the block; Overloaded at once if none is free."""
        if not self._take():
            if self._on_refused is not None:
                self._on_refused(self.kind)
            raise Overloaded(
                f"too many {WHAT[self.kind]} at once ({self.size}); retry shortly",
                {"slots": self.kind, "limit": self.size},
            )
        try:
            yield
        finally:
            self._give_back()


@dataclass(frozen=True)
class Slots:
    """One pool per kind, built once per process (``Services``)."""

    reports: SlotPool
    imports: SlotPool
    exports: SlotPool

    @classmethod
    def of_sizes(
        cls,
        reports: int,
        imports: int,
        exports: int,
        on_refused: Callable[[SlotKind], None] | None = None,
    ) -> Slots:
        return cls(
            SlotPool("reports", reports, on_refused),
            SlotPool("imports", imports, on_refused),
            SlotPool("exports", exports, on_refused),
        )

    def pool(self, kind: SlotKind) -> SlotPool:
        pool: SlotPool = getattr(self, kind)
        return pool


def holding(kind: SlotKind) -> Callable[[Request], AsyncIterator[None]]:
    """A dependency that holds a slot of ``kind`` for the whole request. List it after the
    key's dependency: a caller without the right gets its 401/403, not a 503."""

    async def hold(request: Request) -> AsyncIterator[None]:
        with request.app.state.services.slots.pool(kind).slot():
            yield

    return hold


ReportSlot = Annotated[None, Depends(holding("reports"))]
ImportSlot = Annotated[None, Depends(holding("imports"))]
ExportSlot = Annotated[None, Depends(holding("exports"))]
