"""The card doctor's page: each finding of a namespace with its replay, why the other
misroutes have none, and (for an admin) an apply button, a server-rendered form checked as
sign-in is (same site only). It asks the same room as ``GET /v1/advice`` (app/advice/room.py),
with the same bounds; every value it shows is escaped, errors included."""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from app.advice.room import outcome, waited
from app.advice.schemas import AdviceRead, advice_read
from app.dashboard.filters import parse_filters
from app.dashboard.pages import page_context
from app.dashboard.web import DashboardRoute, PageViewer, render, same_site
from app.deps import AdviceDep, IndexDep
from app.schemas import NAMESPACE_PATTERN
from app.tools.live_index import IndexManager
from registry.errors import ToolReachError

router = APIRouter(prefix="/dashboard", route_class=DashboardRoute, include_in_schema=False)
_NAMESPACE = re.compile(NAMESPACE_PATTERN)


def _unknown(namespace: str) -> str:
    """What a page says of a namespace the viewer may not see or that holds no tools: the
    same words for both."""
    return f"unknown namespace {namespace!r}"


def _page(
    request: Request,
    index: IndexManager,
    viewer: PageViewer,
    namespace: str,
    answer: AdviceRead | None = None,
    error: str | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    filters = parse_filters(request.query_params)
    return render(
        "advice.html",
        status_code,
        **page_context(request, index, viewer, "misroutes", filters),
        namespace=namespace,
        answer=answer,
        advice=answer.advice if answer else [],
        error=error,
        applied=request.query_params.get("applied"),
    )


@router.get("/advice", response_class=HTMLResponse)
async def advice_page(
    request: Request,
    index: IndexDep,
    room: AdviceDep,
    viewer: PageViewer,
    namespace: str = "default",
) -> HTMLResponse:
    """The namespace's advice, worst first, each with its replay."""
    known = _NAMESPACE.fullmatch(namespace) and index.get(namespace) is not None
    if not (known and viewer.can_see(namespace)):
        return _page(request, index, viewer, namespace, error=_unknown(namespace))
    try:
        with room.waiting(viewer.key_id):
            advice = await waited(room.request(namespace), room.wait_seconds)
    except ToolReachError as exc:
        return _page(request, index, viewer, namespace, error=exc.message)
    computing = advice is None
    answer = advice_read(namespace, room.cached(namespace) if computing else advice, computing)
    return _page(request, index, viewer, namespace, answer)


@router.post("/advice/{advice_id}/apply", response_class=HTMLResponse, response_model=None)
async def apply_page(
    advice_id: str,
    request: Request,
    index: IndexDep,
    room: AdviceDep,
    viewer: PageViewer,
    namespace: Annotated[str, Form()] = "default",
) -> HTMLResponse | RedirectResponse:
    """Apply one finding (admin, from this site only), then back to the page."""
    if not same_site(request):
        error = "Applying advice from another site is refused."
        return _page(request, index, viewer, "default", error=error, status_code=403)
    if not _NAMESPACE.fullmatch(namespace) or not viewer.can_see(namespace):
        return _page(request, index, viewer, "default", error=_unknown(namespace), status_code=404)
    if viewer.role != "admin":
        error = "Applying advice needs an admin key."
        return _page(request, index, viewer, namespace, error=error, status_code=403)
    try:
        with room.waiting(viewer.key_id):
            written = await outcome(room.apply(namespace, advice_id))
    except ToolReachError as exc:
        return _page(
            request, index, viewer, namespace, error=exc.message, status_code=exc.status_code
        )
    names = ",".join(f"{w['tool']}@{w['version']}" for w in written)
    target = f"/dashboard/advice?namespace={quote(namespace)}&applied={quote(names, safe='@,')}"
    return RedirectResponse(target, 303)
