"""Hit-rate statistics: the body of ``GET /v1/stats`` and the numbers of the dashboard.

Definitions, over the feedback of the routes the filter selects:

* hit@1 — the tool the agent chose was the first candidate;
* hit@k — it was among the candidates (so every hit@1 is also a hit@k);
* miss — the agent chose a tool the route did not offer (a misroute);
* none-fit — the agent reported that no candidate fit (``chosen`` null).

Counts come from SQL aggregates (:mod:`app.loop.stats_repository`); only latency percentiles are
computed here, over the newest ``LATENCY_SAMPLE`` routes of the window.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal

import numpy as np
from pydantic import BaseModel
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement
from typing_extensions import TypedDict

from app.loop import stats_repository as sql
from app.loop.sqltime import as_utc
from registry.errors import InvalidInput

LATENCY_SAMPLE = 100_000
CONFUSION_LIMIT = 50
COUNTS = ("routes", "feedback", "hit_at_1", "hit_at_k", "miss", "none_fit", "success")
Totals = dict[str, int]
Where = list[ColumnElement[bool]]


@dataclass(frozen=True)
class StatsFilter:
    namespace: str | None = None
    tool: str | None = None  # routes where this tool was offered or chosen
    since: datetime | None = None  # inclusive
    until: datetime | None = None  # exclusive
    bucket: Literal["hour", "day"] = "day"
    # The caller's namespaces (app/keys/scope.py); None: every one. A `namespace` out of
    # them counts as one with no routes, as an unknown namespace does.
    visible: Collection[str] | None = None


class Rates(TypedDict):
    hit_at_1: float | None
    hit_at_k: float | None
    miss: float | None
    none_fit: float | None
    success_after_routing: float | None


class Latency(TypedDict):
    p50: float | None
    p95: float | None
    p99: float | None


class Bucket(TypedDict):
    start: datetime
    routes: int
    feedback: int
    hit_at_1: int
    hit_at_k: int
    miss: int
    none_fit: int


class ToolRow(TypedDict):
    namespace: str
    name: str
    offered: int
    offered_first: int
    chosen: int
    chosen_when_not_offered: int
    passed_over: int
    success: int


class Confusion(TypedDict):
    namespace: str
    offered_first: str
    chosen: str
    count: int


class Misroute(TypedDict):
    route_id: str
    time: datetime
    namespace: str
    query: str
    candidates: list[str]
    chosen: str | None
    outcome: str


class StatsReport(BaseModel):
    """Routing quality for the filters given; rates are shares of the feedback received."""

    routes: int
    feedback: int
    hit_at_1: int
    hit_at_k: int
    miss: int
    none_fit: int
    success: int
    rates: Rates
    latency_ms: Latency
    buckets: list[Bucket]
    tools: list[ToolRow]
    confusions: list[Confusion]
    misroutes: list[Misroute]
    dropped_events: int


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 6) if whole else None


def rates(totals: Totals) -> Rates:
    whole = totals["feedback"]
    return Rates(
        hit_at_1=_rate(totals["hit_at_1"], whole),
        hit_at_k=_rate(totals["hit_at_k"], whole),
        miss=_rate(totals["miss"], whole),
        none_fit=_rate(totals["none_fit"], whole),
        success_after_routing=_rate(totals["success"], whole),
    )


def percentiles(values: list[float]) -> Latency:
    if not values:
        return Latency(p50=None, p95=None, p99=None)
    p50, p95, p99 = (round(float(v), 3) for v in np.percentile(values, [50, 95, 99]))
    return Latency(p50=p50, p95=p95, p99=p99)


def bucket_rows(session: Session, f: StatsFilter, where: Where) -> tuple[list[Bucket], Totals]:
    """The buckets, oldest first, and their totals (the report's top-level counts)."""
    totals: Totals = dict.fromkeys(COUNTS, 0)
    out: list[Bucket] = []
    for start, *counts in sql.buckets(session, where, f.bucket):
        row = dict(zip(COUNTS, (int(c) for c in counts), strict=True))
        for name, value in row.items():
            totals[name] += value
        out.append(
            Bucket(
                start=as_utc(start),
                routes=row["routes"],
                feedback=row["feedback"],
                hit_at_1=row["hit_at_1"],
                hit_at_k=row["hit_at_k"],
                miss=row["miss"],
                none_fit=row["none_fit"],
            )
        )
    return out, totals


def _empty_tool(namespace: str, name: str) -> ToolRow:
    return ToolRow(
        namespace=namespace,
        name=name,
        offered=0,
        offered_first=0,
        chosen=0,
        chosen_when_not_offered=0,
        passed_over=0,
        success=0,
    )


def tool_rows(session: Session, where: Where) -> list[ToolRow]:
    """Per tool: offered, offered first, chosen, chosen when not offered, passed over."""
    tools: dict[tuple[str, str], ToolRow] = {}
    for namespace, name, offered, first, passed_over in sql.tool_offers(session, where):
        row = tools.setdefault((namespace, name), _empty_tool(namespace, name))
        row["offered"], row["offered_first"] = int(offered), int(first)
        row["passed_over"] = int(passed_over)
    for namespace, name, chosen, not_offered, success in sql.tool_choices(session, where):
        row = tools.setdefault((namespace, name), _empty_tool(namespace, name))
        row["chosen"], row["chosen_when_not_offered"] = int(chosen), int(not_offered)
        row["success"] = int(success)
    return sorted(
        tools.values(), key=lambda t: (-t["offered"], -t["chosen"], t["namespace"], t["name"])
    )


def confusion_rows(
    session: Session, where: Where, limit: int | None = CONFUSION_LIMIT
) -> list[Confusion]:
    """The most frequent confused pairs (``limit`` None: all of them)."""
    return [
        Confusion(namespace=namespace, offered_first=first, chosen=chosen, count=int(count))
        for namespace, first, chosen, count in sql.confusions(session, where, limit)
    ]


def misroute_rows(session: Session, where: Where, limit: int) -> list[Misroute]:
    rows = sql.misroutes(session, where, limit)
    candidates = sql.candidate_names(session, [row[0] for row in rows])
    return [
        Misroute(
            route_id=route_id,
            time=as_utc(time),
            namespace=namespace,
            query=query,
            candidates=candidates[route_id],
            chosen=chosen,
            outcome=outcome,
        )
        for route_id, time, namespace, query, chosen, outcome in rows
    ]


def compute_stats(
    session: Session, f: StatsFilter, *, dropped_events: int = 0, misroute_limit: int = 50
) -> StatsReport:
    """Everything ``GET /v1/stats`` answers, for the routes the filter selects."""
    where = sql.route_conditions(f.namespace, f.tool, f.since, f.until, f.visible)
    buckets, totals = bucket_rows(session, f, where)
    return StatsReport(
        **totals,
        rates=rates(totals),
        latency_ms=percentiles(sql.latencies(session, where, LATENCY_SAMPLE)),
        buckets=buckets,
        tools=tool_rows(session, where),
        confusions=confusion_rows(session, where),
        misroutes=misroute_rows(session, where, misroute_limit),
        dropped_events=dropped_events,
    )


def _utc(moment: datetime | None) -> datetime | None:
    """A time without an offset is read as UTC."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


def requested_stats(session: Session, f: StatsFilter, *, dropped_events: int) -> StatsReport:
    """``GET /v1/stats`` as asked: times without an offset are UTC, and a window that ends
    before it starts is InvalidInput (an empty answer would hide the caller's mistake)."""
    f = replace(f, since=_utc(f.since), until=_utc(f.until))
    if f.since is not None and f.until is not None and f.since >= f.until:
        raise InvalidInput("`since` must be before `until`")
    return compute_stats(session, f, dropped_events=dropped_events)


def misroutes_choosing(
    session: Session,
    namespace: str,
    name: str,
    limit: int,
    visible: Collection[str] | None = None,
) -> list[Misroute]:
    """The newest misroutes in which tool ``name`` was chosen without being offered.

    Filtered in the query: a stats report's misroutes for a tool also hold those it was
    merely offered in, and ``limit`` of those could hide every one it was chosen in.
    """
    return misroute_rows(session, sql.chosen_conditions(namespace, name, visible), limit)


def every_confusion(
    session: Session,
    namespace: str | None,
    since: datetime | None,
    until: datetime | None,
    visible: Collection[str] | None = None,
) -> list[Confusion]:
    """Every confused pair of these routes (a stats report lists the most frequent only)."""
    where = sql.route_conditions(namespace, None, since, until, visible)
    return confusion_rows(session, where, limit=None)
