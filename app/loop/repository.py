"""Every SQL statement on route events and feedback (statistics aside: see stats_repository)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import and_, delete, func, insert, or_, select
from sqlalchemy.orm import Session

from app.loop.models import Feedback, MemoryForget, RouteEvent, RouteEventCandidate
from app.loop.sqltime import as_utc
from registry.models import insert_new

if TYPE_CHECKING:
    from app.loop.events import RouteEventRecord


# Postgres: feedback for a route this replica does not know asks, on this channel (payload:
# the route id), whichever replica holds its event to write it now (app/tools/listener.py).
ROUTE_WANTED_CHANNEL = "toolreach_route_wanted"


@dataclass(frozen=True, slots=True)
class RouteFacts:
    """What feedback needs to know of a route: its namespace and what it offered, in order."""

    route_id: str
    namespace: str
    candidates: tuple[str, ...]


def insert_events(session: Session, records: Sequence[RouteEventRecord]) -> int:
    """Insert events and their candidates; ids already stored (a retried batch) are skipped."""
    ids = [r.route_id for r in records]
    stored = set(session.scalars(select(RouteEvent.id).where(RouteEvent.id.in_(ids))))
    fresh = [r for r in records if r.route_id not in stored]
    if not fresh:
        return 0
    session.execute(insert(RouteEvent), [r.event_row() for r in fresh])
    candidates = [row for r in fresh for row in r.candidate_rows()]
    if candidates:
        session.execute(insert(RouteEventCandidate), candidates)
    return len(fresh)


def find_route(session: Session, route_id: str) -> RouteFacts | None:
    event = session.get(RouteEvent, route_id)
    if event is None:
        return None
    names = session.scalars(
        select(RouteEventCandidate.name)
        .where(RouteEventCandidate.route_id == route_id)
        .order_by(RouteEventCandidate.rank)
    )
    return RouteFacts(route_id, event.namespace, tuple(names))


def ask_for_route(session: Session, route_id: str) -> bool:
    """Ask the other replicas for a route's event (delivered at commit); False where there
    is nobody to ask (SQLite: one process)."""
    if session.get_bind().dialect.name != "postgresql":
        return False
    session.execute(select(func.pg_notify(ROUTE_WANTED_CHANNEL, route_id)))
    return True


def get_feedback(session: Session, route_id: str) -> Feedback | None:
    return session.get(Feedback, route_id)


def add_feedback(session: Session, feedback: Feedback) -> bool:
    """Insert a new feedback row unless the route has one already (a report that landed at
    the same moment); True if this one was inserted. INSERT ... ON CONFLICT DO NOTHING: no
    error to recover from, so no savepoint (whose release commits on SQLite)."""
    values = {c.key: getattr(feedback, c.key) for c in Feedback.__table__.columns}
    statement = insert_new(session, Feedback).values(**values)
    # RETURNING says whether a row went in (psycopg reports no rowcount for this statement).
    return session.execute(statement.returning(Feedback.route_id)).first() is not None


@dataclass(frozen=True, slots=True)
class MemoryReport:
    """A report query memory may remember: the step's stored text and whose evidence it is
    (the reporting key, else the key that routed: ``trust.evidence_key``)."""

    namespace: str
    chosen: str
    query: str
    key_id: str | None
    route_id: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ForgetMark:
    """An admin's forget: the tool's reports before ``created_at`` (of one step text, by
    the hash of its normalised form, or all of them when ``text_hash`` is None)."""

    namespace: str
    tool: str
    text_hash: str | None
    created_at: datetime


def memory_reports(session: Session, since: datetime) -> list[MemoryReport]:
    """Reports since ``since`` that name a tool and succeeded, or were validated and have
    no outcome yet (not contradicted), with their route's stored step text."""
    counted = or_(
        Feedback.outcome == "success",
        and_(Feedback.outcome == "unknown", Feedback.from_validate.is_(True)),
    )
    rows = session.execute(
        select(
            Feedback.namespace,
            Feedback.chosen,
            RouteEvent.query,
            func.coalesce(Feedback.key_id, RouteEvent.key_id),
            Feedback.route_id,
            Feedback.created_at,
        )
        .join(RouteEvent, RouteEvent.id == Feedback.route_id)
        .where(Feedback.chosen.is_not(None), Feedback.created_at >= since, counted)
    )
    return [
        MemoryReport(ns, str(chosen), query, key, route_id, as_utc(at))
        for ns, chosen, query, key, route_id, at in rows
    ]


def forget_marks(session: Session) -> list[ForgetMark]:
    rows = session.scalars(select(MemoryForget))
    return [ForgetMark(m.namespace, m.tool, m.text_hash, as_utc(m.created_at)) for m in rows]


def add_forget_mark(session: Session, mark: ForgetMark) -> None:
    session.add(
        MemoryForget(
            namespace=mark.namespace,
            tool=mark.tool,
            text_hash=mark.text_hash,
            created_at=mark.created_at,
        )
    )
    session.flush()


def old_route_ids(session: Session, before: datetime, limit: int) -> list[str]:
    query = select(RouteEvent.id).where(RouteEvent.created_at < before).limit(limit)
    return list(session.scalars(query))


def count_old_routes(session: Session, before: datetime) -> int:
    query = select(func.count()).select_from(RouteEvent).where(RouteEvent.created_at < before)
    return int(session.scalar(query) or 0)


def delete_routes(session: Session, route_ids: Sequence[str]) -> None:
    """Delete these events with their candidates and their feedback."""
    session.execute(delete(RouteEventCandidate).where(RouteEventCandidate.route_id.in_(route_ids)))
    session.execute(delete(Feedback).where(Feedback.route_id.in_(route_ids)))
    session.execute(delete(RouteEvent).where(RouteEvent.id.in_(route_ids)))


def delete_old_feedback(session: Session, before: datetime) -> int:
    """Feedback older than `before` whose event is already gone (or never landed)."""
    result = session.execute(delete(Feedback).where(Feedback.created_at < before))
    return int(getattr(result, "rowcount", 0) or 0)
