"""The statistics pages: overview, tools, confusions and misroutes, look-alikes; and their JSON."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse

from app.capacity.slots import ReportSlot
from app.dashboard import charts, gauges
from app.dashboard.auth import Viewer
from app.dashboard.data import (
    all_confusions,
    confusion_counts,
    load_lookalikes,
    load_stats,
    pair_key,
    timeline,
)
from app.dashboard.filters import (
    RANGE_LABELS,
    Filters,
    page_of,
    parse_filters,
    parse_threshold,
)
from app.dashboard.web import DashboardRoute, JsonViewer, PageViewer, render
from app.db import SessionFactory, unit_of_work
from app.deps import EventsDep, IndexDep, LearningDep, LookalikesDep, SessionsDep
from app.learning import service as learning
from app.learning.service import LearningCache
from app.tools.live_index import IndexManager

router = APIRouter(prefix="/dashboard", route_class=DashboardRoute, include_in_schema=False)
LOOKALIKES_SHOWN = 50  # the most similar pairs listed; the heading says when there are more
TOOLS_PAGE_SIZE = 50  # rows of the tools table per page

TOOL_COLUMNS = {
    "namespace": "Namespace",
    "name": "Tool",
    "offered": "Offered",
    "offered_first": "Offered first",
    "chosen": "Chosen",
    "chosen_when_not_offered": "Chosen, not offered",
    "passed_over": "Passed over",
    "success": "Succeeded",
}
TEXT_COLUMNS = ("namespace", "name")


def page_context(
    request: Request, index: IndexManager, viewer: Viewer, active: str, filters: Filters
) -> dict[str, Any]:
    """What every page's frame needs: who, where, and the filter bar's state (the viewer's
    namespaces only)."""
    namespaces = index.namespaces()
    return {
        "viewer": viewer,
        "active": active,
        "filters": filters,
        "path": request.url.path,
        "namespaces": {ns: namespaces[ns] for ns in sorted(namespaces) if viewer.can_see(ns)},
        "range_labels": RANGE_LABELS,
    }


def _overview_charts(report: dict[str, Any], filters: Filters) -> dict[str, Any]:
    line = timeline(report["buckets"], filters, datetime.now(UTC))
    kwargs: dict[str, Any] = {"bucket": filters.bucket}
    latency = report["latency_ms"]
    return {
        "hits": charts.line_chart(
            line.starts,
            [
                charts.Series("hit@1", line.hit_at_1, "s-hit1", line.hit_at_1_detail),
                charts.Series("hit@k", line.hit_at_k, "s-hitk", line.hit_at_k_detail),
            ],
            title="hit@1 and hit@k over time",
            **kwargs,
        ),
        "volume": charts.bar_chart(
            line.starts,
            [
                charts.Series("routes", line.routes, "s-routes"),
                charts.Series("feedback", line.feedback, "s-feedback"),
            ],
            title="routes and feedback per bucket",
            **kwargs,
        ),
        "latency": gauges.latency_chart(
            [(p, latency.get(p)) for p in ("p50", "p95", "p99")], title="route latency"
        ),
        "shares": gauges.share_chart(
            [
                ("used the first candidate (hit@1)", report["hit_at_1"], "s-hit1"),
                ("used a lower candidate", report["hit_at_k"] - report["hit_at_1"], "s-hitk"),
                ("used a tool not offered (miss)", report["miss"], "s-miss"),
                ("none of the candidates fit", report["none_fit"], "s-nonefit"),
            ],
            title="what the agents used, of the feedback received",
        ),
    }


@router.get("", response_class=HTMLResponse)
def overview(
    request: Request,
    sessions: SessionsDep,
    events: EventsDep,
    index: IndexDep,
    cache: LearningDep,
    viewer: PageViewer,
    _slot: ReportSlot,
) -> HTMLResponse:
    """Hit rates over time, volume, latency and the headline counts."""
    filters = parse_filters(request.query_params)
    stats = load_stats(sessions, events, filters, viewer.namespaces, misroute_limit=5)
    report = stats.model_dump()
    shown = [ns for ns in sorted(index.namespaces()) if viewer.can_see(ns)]
    return render(
        "overview.html",
        **page_context(request, index, viewer, "overview", filters),
        report=report,
        charts=_overview_charts(report, filters),
        learned=learned_models(sessions, cache, shown, filters),
    )


def learned_models(
    sessions: SessionFactory, cache: LearningCache, shown: list[str], filters: Filters
) -> list[dict[str, Any]]:
    """The learned model of each namespace in view (app/learning/service.py ``overview``)."""
    if filters.namespace is not None:
        shown = [ns for ns in shown if ns == filters.namespace]
    with unit_of_work(sessions) as session:
        return learning.overview(session, cache, shown)


def sorted_tools(
    rows: list[dict[str, Any]], sort: str | None, direction: str | None
) -> tuple[list[dict[str, Any]], str, str]:
    """The tool rows sorted by ``sort`` (a column; else offered) in ``direction`` (asc or
    desc; else the column's natural order), with the sort and direction used."""
    sort = sort if sort in TOOL_COLUMNS else "offered"
    default_dir = "asc" if sort in TEXT_COLUMNS else "desc"
    direction = direction if direction in ("asc", "desc") else default_dir
    ordered = sorted(
        rows, key=lambda r: (r[sort], r["namespace"], r["name"]), reverse=direction == "desc"
    )
    return ordered, sort, direction


@router.get("/tools", response_class=HTMLResponse)
def tools(
    request: Request,
    sessions: SessionsDep,
    events: EventsDep,
    index: IndexDep,
    viewer: PageViewer,
    _slot: ReportSlot,
) -> HTMLResponse:
    """Per-tool counts, sortable by every column (server-side, `?sort=COLUMN&dir=asc|desc`),
    a page of `TOOLS_PAGE_SIZE` rows at a time (`?page=N`)."""
    filters = parse_filters(request.query_params)
    report = load_stats(sessions, events, filters, viewer.namespaces, misroute_limit=0).model_dump()
    params = request.query_params
    rows, sort, direction = sorted_tools(report["tools"], params.get("sort"), params.get("dir"))
    page = page_of(params.get("page"), len(rows), TOOLS_PAGE_SIZE)
    return render(
        "tools.html",
        **page_context(request, index, viewer, "tools", filters),
        report=report,
        rows=rows[page.offset : page.offset + page.size],
        total=len(rows),
        page=page,
        columns=TOOL_COLUMNS,
        text_columns=TEXT_COLUMNS,
        sort=sort,
        direction=direction,
    )


@router.get("/misroutes", response_class=HTMLResponse)
def misroutes(
    request: Request,
    sessions: SessionsDep,
    events: EventsDep,
    index: IndexDep,
    viewer: PageViewer,
    _slot: ReportSlot,
) -> HTMLResponse:
    """The most frequent confusions, and every misroute with its query and candidates."""
    filters = parse_filters(request.query_params)
    limit = 200 if request.query_params.get("limit") == "200" else 50
    report = load_stats(sessions, events, filters, viewer.namespaces, misroute_limit=limit)
    return render(
        "misroutes.html",
        **page_context(request, index, viewer, "misroutes", filters),
        report=report.model_dump(),
        limit=limit,
    )


@router.get("/lookalikes", response_class=HTMLResponse)
def lookalikes(
    request: Request,
    sessions: SessionsDep,
    index: IndexDep,
    cache: LookalikesDep,
    viewer: PageViewer,
    _slot: ReportSlot,
) -> HTMLResponse:
    """Pairs of tools so alike that they get confused, with how often they were confused."""
    filters = parse_filters(request.query_params)
    threshold = parse_threshold(request.query_params.get("threshold"))
    visible = viewer.namespaces
    found = load_lookalikes(cache, visible, filters.namespace, threshold, LOOKALIKES_SHOWN + 1)
    pairs = found.pairs
    counts = confusion_counts(all_confusions(sessions, visible, filters))
    return render(
        "lookalikes.html",
        **page_context(request, index, viewer, "lookalikes", filters),
        pairs=[
            (p, counts.get(pair_key(p.namespace, p.a, p.b), 0)) for p in pairs[:LOOKALIKES_SHOWN]
        ],
        more=len(pairs) > LOOKALIKES_SHOWN,
        complete=found.complete,
        threshold=threshold,
    )


@router.get("/stats.json")
def stats_json(
    request: Request,
    sessions: SessionsDep,
    events: EventsDep,
    viewer: JsonViewer,
    _slot: ReportSlot,
) -> JSONResponse:
    """The numbers behind the pages, for the same filters: the body of GET /v1/stats."""
    filters = parse_filters(request.query_params)
    report = load_stats(sessions, events, filters, viewer.namespaces)
    return JSONResponse(report.model_dump(mode="json"))
