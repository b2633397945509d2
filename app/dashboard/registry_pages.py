"""The registry browser: namespaces, a searchable tool list, and a card page."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.capacity.slots import ExportSlot, ReportSlot
from app.dashboard.cards import load_card, schema_rows
from app.dashboard.data import chosen_misroutes, load_stats
from app.dashboard.filters import parse_filters, positive_int
from app.dashboard.pages import page_context
from app.dashboard.web import DashboardRoute, PageViewer, render
from app.db import unit_of_work
from app.deps import EventsDep, IndexDep, MemoryDep, SessionsDep
from app.loop.memory import MemoryCache, RememberedStep
from app.tools.service import list_tools
from registry.card import NAMESPACE_PATTERN
from registry.errors import NotFound

router = APIRouter(prefix="/dashboard", route_class=DashboardRoute, include_in_schema=False)
PAGE_SIZE = 50
_NAMESPACE = re.compile(NAMESPACE_PATTERN)


@router.get("/registry", response_class=HTMLResponse)
def registry(
    request: Request,
    sessions: SessionsDep,
    index: IndexDep,
    viewer: PageViewer,
    _slot: ExportSlot,
) -> HTMLResponse:
    """Namespaces with their sizes, and a page of tools matching a search by name or summary."""
    filters = parse_filters(request.query_params)
    q = request.query_params.get("q", "")[:200]
    page = positive_int(request.query_params.get("page")) or 1
    with unit_of_work(sessions) as session:
        cards, total = list_tools(
            session,
            namespace=filters.namespace,
            text=q.strip() or None,
            offset=(page - 1) * PAGE_SIZE,
            limit=PAGE_SIZE,
            visible=viewer.namespaces,
        )
    return render(
        "registry.html",
        **page_context(request, index, viewer, "registry", filters),
        cards=cards,
        total=total,
        q=q,
        page=page,
        pages=max(1, -(-total // PAGE_SIZE)),
    )


@router.get("/registry/{namespace}/{name}", response_class=HTMLResponse)
def card_page(
    request: Request,
    namespace: str,
    name: str,
    sessions: SessionsDep,
    events: EventsDep,
    index: IndexDep,
    memory: MemoryDep,
    viewer: PageViewer,
    _slot: ReportSlot,
) -> HTMLResponse:
    """One card in full: description, parameters, schema, error table, versions, its routing."""
    version = positive_int(request.query_params.get("version"))
    filters = parse_filters({"namespace": namespace, "range": "all"})
    context = page_context(request, index, viewer, "registry", filters)
    try:
        if not _NAMESPACE.fullmatch(namespace):
            raise NotFound(f"no namespace {namespace!r}")
        with unit_of_work(sessions) as session:
            card = load_card(session, namespace, name, version, viewer.namespaces)
    except NotFound as missing:
        return render(
            "not_found.html", status_code=404, **context, message=missing.message, name=name
        )
    stats = load_stats(sessions, events, filters, viewer.namespaces, tool=name, misroute_limit=0)
    routing = next((t for t in stats.tools if t["name"] == name), None)
    return render(
        "card.html",
        **context,
        page=card,
        card=card.stored.card,
        parameters=schema_rows(card.stored.card.parameters),
        returns=schema_rows(card.stored.card.returns),
        routing=routing,
        misroutes=chosen_misroutes(sessions, viewer.namespaces, namespace, name),
        remembered=remembered_steps(memory, namespace, name),
        now=datetime.now(UTC),
    )


def remembered_steps(memory: MemoryCache, namespace: str, name: str) -> list[RememberedStep]:
    """The steps query memory remembers for the tool, heaviest first (app/loop/memory.py)."""
    steps = [s for s in memory.steps(namespace) if s.tool == name]
    return sorted(steps, key=lambda s: (-s.weight, s.text))
