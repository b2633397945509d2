"""The card doctor's page: each finding of a namespace with its replay, and (for an admin)
an apply button, a server-rendered form checked as sign-in is (same site only)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from app.advice import service as doctor
from app.dashboard.filters import parse_filters
from app.dashboard.pages import page_context
from app.dashboard.web import DashboardRoute, PageViewer, render, same_site
from app.db import unit_of_work
from app.deps import EncoderDep, IndexDep, SessionsDep
from registry.errors import ToolReachError

router = APIRouter(prefix="/dashboard", route_class=DashboardRoute, include_in_schema=False)


@router.get("/advice", response_class=HTMLResponse)
def advice_page(
    request: Request,
    sessions: SessionsDep,
    index: IndexDep,
    encoder: EncoderDep,
    viewer: PageViewer,
    namespace: str = "default",
) -> HTMLResponse:
    """The namespace's advice, worst first, each with its replay."""
    filters = parse_filters(request.query_params)
    found, error = [], None
    if viewer.can_see(namespace):
        try:
            with unit_of_work(sessions) as session:
                items = doctor.advice(session, index, encoder, namespace)
                found = [doctor.as_json(f) for f in items]
        except ToolReachError as exc:
            error = exc.message
    else:
        error = f"namespace {namespace!r} is not one of this key's"
    return render(
        "advice.html",
        **page_context(request, index, viewer, "misroutes", filters),
        namespace=namespace,
        advice=found,
        error=error,
        applied=request.query_params.get("applied"),
    )


@router.post("/advice/{advice_id}/apply", response_class=HTMLResponse, response_model=None)
def apply_page(
    advice_id: str,
    request: Request,
    sessions: SessionsDep,
    index: IndexDep,
    encoder: EncoderDep,
    viewer: PageViewer,
    namespace: Annotated[str, Form()] = "default",
) -> HTMLResponse | RedirectResponse:
    """Apply one finding (admin, from this site only), then back to the page."""
    if not same_site(request):
        return HTMLResponse("Applying advice from another site is refused.", status_code=403)
    if viewer.role != "admin" or not viewer.can_see(namespace):
        return HTMLResponse("Applying advice needs an admin key.", status_code=403)
    try:
        with unit_of_work(sessions) as session:
            written = doctor.apply(session, index, encoder, namespace, advice_id)
    except ToolReachError as exc:
        return HTMLResponse(exc.message, status_code=exc.status_code)
    index.sync()
    names = ",".join(f"{w['tool']}@{w['version']}" for w in written)
    return RedirectResponse(f"/dashboard/advice?namespace={namespace}&applied={names}", 303)
