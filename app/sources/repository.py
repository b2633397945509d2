"""Every SQL statement on sources and their tools' bindings. It flushes; it never commits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session

from app.sources.binding import Binding, stored
from app.sources.models import Source, SourceTool
from registry.models import utcnow


def get(session: Session, name: str) -> Source | None:
    return session.scalar(select(Source).where(Source.name == name))


def list_sources(session: Session, namespace: str | None = None) -> list[Source]:
    query = select(Source).order_by(Source.name)
    if namespace is not None:
        query = query.where(Source.namespace == namespace)
    return list(session.scalars(query))


def add(session: Session, source: Source) -> Source:
    session.add(source)
    session.flush()
    return source


def delete(session: Session, source: Source) -> None:
    session.delete(source)
    session.flush()


def tools(session: Session, source_id: int) -> list[SourceTool]:
    return list(session.scalars(select(SourceTool).where(SourceTool.source_id == source_id)))


def tool_counts(session: Session, source_id: int) -> tuple[int, int]:
    """(live, retired) tools of a source."""
    rows = session.execute(
        select(SourceTool.retired_at.is_(None), func.count())
        .where(SourceTool.source_id == source_id)
        .group_by(SourceTool.retired_at.is_(None))
    )
    counts = {bool(live): int(n) for live, n in rows.tuples()}
    return counts.get(True, 0), counts.get(False, 0)


def put_bindings(session: Session, source_id: int, bindings: Mapping[str, Binding]) -> None:
    """Store each live tool's binding, as JSON (a returning tool is live again)."""
    existing = {t.name: t for t in tools(session, source_id)}
    now = utcnow()
    for name, typed in bindings.items():
        binding, row = stored(typed), existing.get(name)
        if row is None:
            session.add(SourceTool(source_id=source_id, name=name, binding=binding, updated_at=now))
        elif row.binding != binding or row.retired_at is not None:
            row.binding, row.retired_at, row.updated_at = binding, None, now
    session.flush()


def retire(session: Session, rows: Sequence[SourceTool]) -> None:
    now = utcnow()
    for row in rows:
        row.retired_at, row.updated_at = now, now
    session.flush()


def binding(session: Session, source_name: str, tool: str) -> tuple[Source, SourceTool] | None:
    """The source and the live binding of one of its tools (the gateway's one read)."""
    row = session.execute(
        select(Source, SourceTool)
        .join(SourceTool, SourceTool.source_id == Source.id)
        .where(Source.name == source_name, SourceTool.name == tool)
        .where(SourceTool.retired_at.is_(None))
    ).first()
    return None if row is None else (row[0], row[1])


def claim_due(session: Session, source_id: int, every: timedelta) -> bool:
    """Take a source's scheduled sync if it is due and no replica took it within ``every``
    (one UPDATE: two replicas cannot both win)."""
    now = utcnow()
    due = now - every
    result = session.execute(
        update(Source)
        .where(Source.id == source_id)
        .where(or_(Source.synced_at.is_(None), Source.synced_at <= due))
        .where(or_(Source.sync_claimed_at.is_(None), Source.sync_claimed_at <= due))
        .values(sync_claimed_at=now)
    )
    return bool(getattr(result, "rowcount", 0))


def due_ids(session: Session, every: timedelta) -> list[int]:
    due: datetime = utcnow() - every
    query = select(Source.id).where(or_(Source.synced_at.is_(None), Source.synced_at <= due))
    return list(session.scalars(query))
