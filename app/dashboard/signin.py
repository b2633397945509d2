"""Signing in and out of the dashboard, and its stylesheet (the only public dashboard URLs)."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Annotated

from fastapi import APIRouter, Form, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse

from app.dashboard.auth import (
    COOKIE_NAME,
    COOKIE_PATH,
    SESSION_SECONDS,
    issue,
    key_for_login,
    verify,
)
from app.dashboard.signouts import sign_out
from app.dashboard.web import DashboardRoute, SignedIn, render, safe_next, same_site
from app.db import unit_of_work
from app.deps import KeysDep, LimiterDep, MetricsDep, SessionsDep
from app.limits.counts import Refusal

router = APIRouter(prefix="/dashboard", route_class=DashboardRoute, include_in_schema=False)
MAX_KEY = 512


@router.get("/login", response_class=HTMLResponse, response_model=None)
def login_form(viewer: SignedIn, next: str = "/dashboard") -> HTMLResponse | RedirectResponse:
    """The sign-in form; an already signed-in viewer goes straight on."""
    if viewer is not None:
        return RedirectResponse(safe_next(next), status_code=303)
    return render("login.html", next=safe_next(next), error=None)


CROSS_SITE = "Signing in or out from another site is refused."


@router.post("/login", response_class=HTMLResponse, response_model=None)
def login(
    request: Request,
    keys: KeysDep,
    limiter: LimiterDep,
    metrics: MetricsDep,
    key: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "/dashboard",
) -> HTMLResponse | RedirectResponse:
    """Exchange an admin or dashboard key for a signed session cookie.

    Only from this site: a page elsewhere could otherwise sign a visitor in with its own key
    (login CSRF) and see what they then look at as that viewer."""
    if not same_site(request):
        return render("login.html", status_code=403, next="/dashboard", error=CROSS_SITE)
    client = limiter.client(request.scope)
    refusal = limiter.blocked(client)
    if refusal is not None:  # too many wrong keys from here: not even a right one is tried
        metrics.rate_limited.labels(refusal.kind).inc()
        return _slow_down(refusal, next)
    record = key_for_login(key.strip(), keys) if len(key) <= MAX_KEY else None
    if record is None:
        limiter.failed(client)
        error = "That key is not an admin or dashboard key of this service."
        return render("login.html", status_code=401, next=safe_next(next), error=error)
    response = RedirectResponse(safe_next(next), status_code=303)
    response.set_cookie(
        COOKIE_NAME,
        issue(record),
        max_age=SESSION_SECONDS,
        path=COOKIE_PATH,
        secure=True,
        httponly=True,
        samesite="strict",
    )
    return response


def _slow_down(refusal: Refusal, next: str) -> HTMLResponse:
    """The form again, 429 with Retry-After: this address sent too many wrong keys."""
    seconds = refusal.retry_after
    error = f"Too many wrong keys from this address. Try again in {seconds} seconds."
    page = render("login.html", status_code=429, next=safe_next(next), error=error)
    page.headers["Retry-After"] = str(seconds)
    return page


@router.post("/logout", response_model=None)
def logout(
    request: Request, keys: KeysDep, sessions: SessionsDep
) -> RedirectResponse | HTMLResponse:
    """End the session: recorded as signed out (so a copy of the cookie no longer works on
    any replica), and the browser told to forget it. Only from this site."""
    if not same_site(request):
        return render("login.html", status_code=403, next="/dashboard", error=CROSS_SITE)
    token = request.cookies.get(COOKIE_NAME)
    viewer = verify(token, keys) if token else None
    if token is not None and viewer is not None:
        with unit_of_work(sessions) as session:
            sign_out(session, token, viewer.expires)
    response = RedirectResponse("/dashboard/login", status_code=303)
    response.delete_cookie(
        COOKIE_NAME, path=COOKIE_PATH, secure=True, httponly=True, samesite="strict"
    )
    return response


@cache
def _stylesheet() -> bytes:
    return resources.files("app.dashboard").joinpath("static/dashboard.css").read_bytes()


@router.get("/static/dashboard.css")
def stylesheet() -> Response:
    """The stylesheet: no data in it, so the login page may use it too."""
    return Response(
        _stylesheet(), media_type="text/css", headers={"Cache-Control": "public, max-age=3600"}
    )
