"""The SQL of the hit-rate statistics: aggregates only, identical on Postgres and SQLite.

Every query starts from the route events the filter selects (namespace, time range, tool
offered or chosen) and joins the candidates and the feedback by route id.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, case, exists, func, or_, select
from sqlalchemy.orm import Session, aliased
from sqlalchemy.sql.elements import ColumnElement

from app.loop.models import Feedback, RouteEvent, RouteEventCandidate
from app.loop.sqltime import bucket_start

E, C, F = RouteEvent, RouteEventCandidate, Feedback


def route_conditions(
    namespace: str | None,
    tool: str | None,
    since: datetime | None,
    until: datetime | None,
    visible: Collection[str] | None = None,
) -> list[ColumnElement[bool]]:
    """Which route events count: `since` inclusive, `until` exclusive; only those of
    ``visible`` namespaces (None: of every one)."""
    conditions: list[ColumnElement[bool]] = []
    if namespace is not None:
        conditions.append(E.namespace == namespace)
    if visible is not None:
        conditions.append(E.namespace.in_(sorted(visible)))
    if since is not None:
        conditions.append(E.created_at >= since)
    if until is not None:
        conditions.append(E.created_at < until)
    if tool is not None:
        # Aliases, so the subqueries correlate with the event only, never with the outer
        # query's own candidates or feedback.
        c, f = aliased(C), aliased(F)
        offered = exists().where(c.route_id == E.id, c.name == tool)
        chosen = exists().where(f.route_id == E.id, f.chosen == tool)
        conditions.append(or_(offered, chosen))
    return conditions


def chosen_conditions(
    namespace: str, chosen: str, visible: Collection[str] | None = None
) -> list[ColumnElement[bool]]:
    """The route events of ``namespace`` whose feedback chose tool ``chosen``."""
    return [*route_conditions(namespace, None, None, None, visible), F.chosen == chosen]


def _count(condition: ColumnElement[bool]) -> ColumnElement[Any]:
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


HIT_1 = F.rank == 1
HIT_K = F.rank.is_not(None)
MISS = and_(F.chosen.is_not(None), F.rank.is_(None))
NONE_FIT = and_(F.route_id.is_not(None), F.chosen.is_(None))
SUCCESS = F.outcome == "success"


def buckets(
    session: Session, conditions: Sequence[ColumnElement[bool]], unit: str
) -> list[tuple[Any, ...]]:
    """Per bucket: start, routes, feedback, hit@1, hit@k, miss, none-fit, success."""
    start = bucket_start(session, E.created_at, unit).label("start")
    query = (
        select(
            start,
            func.count(E.id),
            func.count(F.route_id),
            _count(HIT_1),
            _count(HIT_K),
            _count(MISS),
            _count(NONE_FIT),
            _count(SUCCESS),
        )
        .select_from(E)
        .outerjoin(F, F.route_id == E.id)
        .where(*conditions)
        .group_by(start)
        .order_by(start)
    )
    return [tuple(row) for row in session.execute(query)]


def latencies(session: Session, conditions: Sequence[ColumnElement[bool]], cap: int) -> list[float]:
    """Latency of the newest `cap` routes selected."""
    query = select(E.latency_ms).where(*conditions).order_by(E.created_at.desc()).limit(cap)
    return [float(v) for v in session.scalars(query)]


def tool_offers(
    session: Session, conditions: Sequence[ColumnElement[bool]]
) -> list[tuple[Any, ...]]:
    """Per offered tool: namespace, name, offered, offered first, passed over."""
    passed_over = and_(F.route_id.is_not(None), or_(F.chosen.is_(None), F.chosen != C.name))
    query = (
        select(E.namespace, C.name, func.count(), _count(C.rank == 1), _count(passed_over))
        .select_from(C)
        .join(E, E.id == C.route_id)
        .outerjoin(F, F.route_id == C.route_id)
        .where(*conditions)
        .group_by(E.namespace, C.name)
    )
    return [tuple(row) for row in session.execute(query)]


def tool_choices(
    session: Session, conditions: Sequence[ColumnElement[bool]]
) -> list[tuple[Any, ...]]:
    """Per chosen tool: namespace, name, chosen, chosen when not offered, successes."""
    query = (
        select(E.namespace, F.chosen, func.count(), _count(F.rank.is_(None)), _count(SUCCESS))
        .select_from(F)
        .join(E, E.id == F.route_id)
        .where(F.chosen.is_not(None), *conditions)
        .group_by(E.namespace, F.chosen)
    )
    return [tuple(row) for row in session.execute(query)]


def confusions(
    session: Session, conditions: Sequence[ColumnElement[bool]], limit: int | None
) -> list[tuple[Any, ...]]:
    """(namespace, offered first, chosen instead, count), most frequent first."""
    count = func.count().label("n")
    query = (
        select(E.namespace, C.name, F.chosen, count)
        .select_from(F)
        .join(E, E.id == F.route_id)
        .join(C, and_(C.route_id == F.route_id, C.rank == 1))
        .where(F.chosen.is_not(None), F.chosen != C.name, *conditions)
        .group_by(E.namespace, C.name, F.chosen)
        .order_by(count.desc(), E.namespace, C.name, F.chosen)
        .limit(limit)
    )
    return [tuple(row) for row in session.execute(query)]


def misroutes(
    session: Session, conditions: Sequence[ColumnElement[bool]], limit: int
) -> list[tuple[Any, ...]]:
    """(route id, time, namespace, query, chosen, outcome) of misroutes, newest first."""
    query = (
        select(E.id, E.created_at, E.namespace, E.query, F.chosen, F.outcome)
        .select_from(F)
        .join(E, E.id == F.route_id)
        .where(MISS, *conditions)
        .order_by(E.created_at.desc(), E.id)
        .limit(limit)
    )
    return [tuple(row) for row in session.execute(query)]


def candidate_names(session: Session, route_ids: Sequence[str]) -> dict[str, list[str]]:
    """The candidates of these routes, in rank order."""
    names: dict[str, list[str]] = {route_id: [] for route_id in route_ids}
    if not route_ids:
        return names
    query = select(C.route_id, C.name).where(C.route_id.in_(route_ids)).order_by(C.rank)
    for route_id, name in session.execute(query):
        names[route_id].append(name)
    return names


def reported_steps(session: Session, namespace: str, limit: int) -> list[tuple[Any, ...]]:
    """(query, offered first, chosen, the first's stages, the chosen's rank among the
    candidates or None, the report's key, the route's key) of the namespace's reported routes
    whose agent used a tool, newest first: ``confusions`` row by row, with the right ones."""
    query = (
        select(E.query, C.name, F.chosen, C.stages, F.rank, F.key_id, E.key_id)
        .select_from(F)
        .join(E, E.id == F.route_id)
        .join(C, and_(C.route_id == F.route_id, C.rank == 1))
        .where(F.chosen.is_not(None), E.namespace == namespace)
        .order_by(E.created_at.desc(), E.id)
        .limit(limit)
    )
    return [tuple(row) for row in session.execute(query)]
