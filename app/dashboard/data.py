"""What the pages show, fetched through the services: statistics, look-alikes, the registry.

The statistics are exactly those of ``GET /v1/stats`` (one `compute_stats` for both); this
module only reshapes them for charts and tables. Every loader takes the viewer's namespaces
(``visible``; None: every one) first, so no page can forget them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from app.dashboard.filters import MAX_SLOTS, Filters
from app.db import SessionFactory, unit_of_work
from app.loop.events import EventWriter
from app.loop.stats import (
    Confusion,
    Misroute,
    StatsFilter,
    StatsReport,
    compute_stats,
    every_confusion,
    misroutes_choosing,
)
from app.tools.lookalike_pairs import LookalikeList
from app.tools.lookalikes import LookalikeCache, lookalikes_in

Visible = Collection[str] | None


def load_stats(
    sessions: SessionFactory,
    events: EventWriter,
    filters: Filters,
    visible: Visible,
    *,
    tool: str | None = None,
    misroute_limit: int = 50,
) -> StatsReport:
    """The StatsReport of /v1/stats for these filters, of the ``visible`` namespaces."""
    stats_filter = StatsFilter(
        namespace=filters.namespace,
        tool=tool,
        since=filters.since,
        until=filters.until,
        bucket=filters.bucket,
        visible=visible,
    )
    with unit_of_work(sessions) as session:
        return compute_stats(
            session,
            stats_filter,
            dropped_events=events.dropped,
            misroute_limit=misroute_limit,
        )


@dataclass(frozen=True, slots=True)
class Timeline:
    """Per-bucket series on a regular time axis: empty buckets are zeros or gaps."""

    starts: list[datetime]
    routes: list[float | None]
    feedback: list[float | None]
    hit_at_1: list[float | None]
    hit_at_k: list[float | None]
    hit_at_1_detail: list[str]
    hit_at_k_detail: list[str]


def _utc(value: datetime | str) -> datetime:
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _floor(moment: datetime, filters: Filters) -> datetime:
    moment = moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return moment.replace(hour=0) if filters.bucket == "day" else moment


def _slots(found: list[datetime], filters: Filters, now: datetime) -> list[datetime]:
    """Every bucket start from the first with data to the range's end (or now).

    Empty time before the first route is left out, so a new service's chart is not a
    week of nothing with one dot at its end; empty buckets after it stay (traffic stopped).
    """
    if not found:
        return []
    first = found[0]
    end = filters.until - timedelta(microseconds=1) if filters.until else now
    last = max([_floor(end, filters), *found])
    step = timedelta(seconds=filters.bucket_seconds)
    count = int((last - first) / step) + 1
    if count > MAX_SLOTS:  # days over more than five years: the buckets with data only
        return sorted(found)
    return [first + i * step for i in range(count)]


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def timeline(buckets: list[dict[str, Any]], filters: Filters, now: datetime) -> Timeline:
    """Hit rates (hit@1 and hit@k over feedback received) and volume per bucket."""
    by_start = {_utc(b["start"]): b for b in buckets}
    starts = _slots(sorted(by_start), filters, now)
    rows = [by_start.get(start) for start in starts]
    zero = {"routes": 0, "feedback": 0, "hit_at_1": 0, "hit_at_k": 0}
    filled = [row or zero for row in rows]
    return Timeline(
        starts=starts,
        routes=[r["routes"] for r in filled],
        feedback=[r["feedback"] for r in filled],
        hit_at_1=[_rate(r["hit_at_1"], r["feedback"]) for r in filled],
        hit_at_k=[_rate(r["hit_at_k"], r["feedback"]) for r in filled],
        hit_at_1_detail=[f"{r['hit_at_1']} of {r['feedback']}" for r in filled],
        hit_at_k_detail=[f"{r['hit_at_k']} of {r['feedback']}" for r in filled],
    )


def load_lookalikes(
    cache: LookalikeCache,
    visible: Visible,
    namespace: str | None,
    threshold: float,
    limit: int = 50,
) -> LookalikeList:
    """Look-alike pairs of one namespace or of all (``visible``), most similar first."""
    return lookalikes_in(cache, namespace, threshold, limit, visible)


def pair_key(namespace: str, a: str, b: str) -> tuple[str, str, str]:
    """The same key for (a, b) and (b, a)."""
    first, second = sorted((a, b))
    return namespace, first, second


def chosen_misroutes(
    sessions: SessionFactory, visible: Visible, namespace: str, name: str, limit: int = 20
) -> list[Misroute]:
    """The newest misroutes in which this tool was chosen without being offered."""
    with unit_of_work(sessions) as session:
        return misroutes_choosing(session, namespace, name, limit, visible)


def all_confusions(sessions: SessionFactory, visible: Visible, filters: Filters) -> list[Confusion]:
    """Every confused pair for these filters (a stats report lists the 50 most frequent)."""
    with unit_of_work(sessions) as session:
        return every_confusion(session, filters.namespace, filters.since, filters.until, visible)


def confusion_counts(confusions: Iterable[Confusion]) -> dict[tuple[str, str, str], int]:
    """How often each pair of tools was confused, in either direction."""
    counts: dict[tuple[str, str, str], int] = {}
    for c in confusions:
        key = pair_key(c["namespace"], c["offered_first"], c["chosen"])
        counts[key] = counts.get(key, 0) + c["count"]
    return counts
