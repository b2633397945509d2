"""The SQL of the rate limits: add a replica's counts, read the others', forget old windows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from app.limits.counts import KINDS, Slot
from app.limits.models import RateCount


def add_counts(session: Session, replica: str, deltas: Mapping[Slot, int]) -> None:
    """Add ``deltas`` to ``replica``'s rows: one upsert that increments (Postgres, SQLite)."""
    if not deltas:
        return
    rows = [
        {
            "kind": s.kind,
            "subject": s.subject,
            "window_start": s.window,
            "replica": replica,
            "count": n,
        }
        for s, n in sorted(deltas.items(), key=lambda item: _order(item[0]))
    ]
    dialect = session.get_bind().dialect.name
    insert: Any = postgresql_insert if dialect == "postgresql" else sqlite_insert
    statement = insert(RateCount)
    session.execute(
        statement.on_conflict_do_update(
            index_elements=["kind", "subject", "window_start", "replica"],
            set_={"count": RateCount.count + statement.excluded.count},
        ),
        rows,
    )


def _order(slot: Slot) -> tuple[str, str, int]:
    """Rows in one order on every replica, so two flushes never lock each other's rows in
    opposite orders (a deadlock)."""
    return slot.kind, slot.subject, slot.window


def others_counts(session: Session, replica: str, since: int) -> list[tuple[Slot, int]]:
    """Every other replica's count, summed, per slot of a window starting at ``since`` or
    later."""
    query = (
        select(RateCount.kind, RateCount.subject, RateCount.window_start, func.sum(RateCount.count))
        .where(RateCount.window_start >= since, RateCount.replica != replica)
        .group_by(RateCount.kind, RateCount.subject, RateCount.window_start)
    )
    return [
        (Slot(kind, subject, window), int(total))
        for kind, subject, window, total in session.execute(query)
        if kind in KINDS
    ]


def forget_before(session: Session, window: int) -> int:
    """Delete the rows of windows that started before ``window``; how many went."""
    result = session.execute(delete(RateCount).where(RateCount.window_start < window))
    return int(getattr(result, "rowcount", 0) or 0)
