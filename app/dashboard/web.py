"""The dashboard's web plumbing: who is signed in, templates, and the headers every page has.

Pages refuse a visitor without a valid session cookie by redirecting to the login form;
JSON URLs answer 401 in the project's one error shape instead.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Annotated, Any
from urllib.parse import quote, unquote, urlencode, urlsplit

from fastapi import Depends, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from app.dashboard.auth import COOKIE_NAME, Viewer, verify
from app.dashboard.signouts import signed_out
from app.db import unit_of_work
from app.deps import KeysDep, SessionsDep
from app.errors import Unauthorized

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class LoginRequired(Exception):
    """A page was asked for without a valid session; the route answers with the login form."""

    def __init__(self, next_url: str) -> None:
        super().__init__(next_url)
        self.next_url = next_url


class DashboardRoute(APIRoute):
    """Turns LoginRequired into a redirect and puts the security headers on every answer."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def dashboard_handler(request: Request) -> Response:
            try:
                response = await handler(request)
            except LoginRequired as needed:
                target = "/dashboard/login?" + urlencode({"next": needed.next_url})
                response = RedirectResponse(target, status_code=303)
            for name, value in SECURITY_HEADERS.items():
                response.headers.setdefault(name, value)
            return response

        return dashboard_handler


def current_viewer(request: Request, keys: KeysDep, sessions: SessionsDep) -> Viewer | None:
    """Who the session cookie stands for: None if it is missing, forged, expired or signed
    out (app/dashboard/signouts.py)."""
    token = request.cookies.get(COOKIE_NAME)
    viewer = verify(token, keys) if token else None
    if viewer is None or token is None:
        return None
    with unit_of_work(sessions) as session:
        return None if signed_out(session, token) else viewer


SignedIn = Annotated[Viewer | None, Depends(current_viewer)]


def require_page_viewer(request: Request, viewer: SignedIn) -> Viewer:
    if viewer is None:
        query = f"?{request.url.query}" if request.url.query else ""
        raise LoginRequired(request.url.path + query)
    return viewer


def require_json_viewer(viewer: SignedIn) -> Viewer:
    if viewer is None:
        raise Unauthorized("sign in at /dashboard/login first (or use /v1/stats with a key)")
    return viewer


PageViewer = Annotated[Viewer, Depends(require_page_viewer)]
JsonViewer = Annotated[Viewer, Depends(require_json_viewer)]


def safe_next(target: str | None) -> str:
    """Only a dashboard path of this site: never an open redirect to another host, nor out of
    the dashboard by dot segments (``/dashboard/../metrics``, also percent-encoded)."""
    if not target or "\\" in target or any(ord(c) < 0x20 for c in target):
        return "/dashboard"
    path = unquote(target.partition("?")[0].partition("#")[0])
    inside = posixpath.normpath(path) == path and (
        path == "/dashboard" or path.startswith("/dashboard/")
    )
    if not inside or "//" in path or path.startswith("/dashboard/login"):
        return "/dashboard"
    return target


def same_site(request: Request) -> bool:
    """Whether a form post comes from this site, by what browsers send with it: a
    ``Sec-Fetch-Site`` of same-origin (or none: typed or bookmarked); from a browser too old to
    send that, an ``Origin`` naming this host. (Under the pages' no-referrer policy Chromium
    sends ``Origin: null`` even from our own form, so Sec-Fetch-Site decides when present.) A
    client that sends neither (curl) is no browser a forged page could drive."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site in ("same-origin", "none")
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return True
    return urlsplit(origin).netloc == request.headers.get("host", "")


def url(path: str, params: dict[str, str] | None = None) -> str:
    query = urlencode({k: v for k, v in (params or {}).items() if v not in ("", None)})
    return f"{path}?{query}" if query else path


def card_url(namespace: str, name: str, version: int | None = None) -> str:
    path = f"/dashboard/registry/{quote(namespace, safe='')}/{quote(name, safe='')}"
    return url(path, {"version": str(version)} if version else None)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.1f} ms"


def _when(value: datetime | str | None) -> str:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return "–" if value is None else f"{value:%Y-%m-%d %H:%M} UTC"


def _pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def _make_env() -> Environment:
    env = Environment(
        loader=PackageLoader("app.dashboard", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(pct=_pct, ms=_ms, when=_when, pretty_json=_pretty_json)
    env.filters["num"] = lambda v: "–" if v is None else f"{v:,}"
    env.globals.update(url=url, card_url=card_url)
    return env


_env = _make_env()


def render(template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """A page from the templates; every value is HTML-escaped unless it is chart Markup."""
    html = _env.get_template(template).render(**context)
    return HTMLResponse(html, status_code=status_code)
