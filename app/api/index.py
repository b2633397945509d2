"""``GET /``: where to go from the service's root (issue 42 item 4). A browser (it asks for
HTML) is sent to the dashboard; any other client gets the entry points as JSON."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from app.api.openapi import api_routes

router = APIRouter()


def wants_html(request: Request) -> bool:
    """A browser's navigation asks for text/html first; curl, httpx and SDKs ask for */*
    or JSON."""
    accepted = request.headers.get("accept", "")
    return "text/html" in accepted.split(",")[0]


@router.api_route("/", methods=["GET", "HEAD"], include_in_schema=False, response_model=None)
def index(request: Request) -> RedirectResponse | dict[str, Any]:
    """The dashboard for a browser; the API's entry points for a client."""
    if wants_html(request):
        return RedirectResponse("/dashboard", status_code=303)
    paths = sorted({r.path for r in api_routes(request.app.routes) if r.path.startswith("/v1/")})
    return {
        "service": request.app.title,
        "version": request.app.version,
        "docs": "/docs",
        "openapi": "/openapi.json",
        "dashboard": "/dashboard",
        "mcp": "/mcp",
        "health": ["/healthz", "/readyz"],
        "api": paths,
    }
