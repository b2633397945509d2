"""The SQL of the rate limits: add a replica's counts, read the others', forget old windows."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import and_, delete, func, or_, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from app.limits.counts import KINDS, Kind, Slot
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


def others_counts(
    session: Session, replica: str, open_now: Mapping[Kind, int]
) -> list[tuple[Slot, int]]:
    """Every other replica's count, summed, per slot of the windows open now (``open_now``:
    each kind's window start)."""
    if not open_now:
        return []
    query = (
        select(RateCount.kind, RateCount.subject, RateCount.window_start, func.sum(RateCount.count))
        .where(_windows(open_now, operator.eq), RateCount.replica != replica)
        .group_by(RateCount.kind, RateCount.subject, RateCount.window_start)
    )
    return [
        (Slot(kind, subject, window), int(total))
        for kind, subject, window, total in session.execute(query)
        if kind in KINDS
    ]


def forget_closed(session: Session, open_now: Mapping[Kind, int], before: int) -> None:
    """Delete the rows of closed windows: each kind's before its open one, and any row of a
    window that started before ``before`` (a kind whose limit was turned off)."""
    closed = RateCount.window_start < before
    if open_now:
        closed = or_(_windows(open_now, operator.lt), closed)
    session.execute(delete(RateCount).where(closed))


def _windows(open_now: Mapping[Kind, int], compare: Callable[[Any, int], Any]) -> Any:
    """(kind = k AND compare(window start, k's open window)) for each kind, OR-ed."""
    return or_(
        *(
            and_(RateCount.kind == kind, compare(RateCount.window_start, start))
            for kind, start in open_now.items()
        )
    )
