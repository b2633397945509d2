"""Who may see the dashboard: the login form, the session cookie, and refusals everywhere."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from starlette.routing import BaseRoute

from app.dashboard import auth
from tests.api.test_errors_auth import assert_error
from tests.conftest import ADMIN, ADMIN_KEY, AGENT_KEY
from tests.dashboard.conftest import VIEWER_KEY, environment_key, sign_in

PUBLIC = {"/dashboard/login", "/dashboard/logout", "/dashboard/static/dashboard.css"}
JSON_URLS = ("/dashboard/stats.json", "/v1/stats", "/v1/lookalikes")


def api_routes(routes: Iterable[BaseRoute]) -> Iterator[APIRoute]:
    """Every endpoint, also inside included routers (FastAPI keeps those as one route each)."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from api_routes(included.routes)
        elif isinstance(route, APIRoute):
            yield route


def dashboard_urls(client: TestClient) -> list[str]:
    """Every dashboard page the app serves (path parameters filled in)."""
    return [
        route.path.replace("{namespace}", "default").replace("{name}", "x")
        for route in api_routes(client.app.routes)  # type: ignore[attr-defined]
        if route.path.startswith("/dashboard")
        and "GET" in route.methods  # pages; a form's POST is checked with its page
        and route.path not in PUBLIC
        and not route.path.endswith(".json")
    ]


def test_the_page_list_is_complete(anonymous: TestClient) -> None:
    assert set(dashboard_urls(anonymous)) == {
        "/dashboard",
        "/dashboard/tools",
        "/dashboard/misroutes",
        "/dashboard/advice",
        "/dashboard/lookalikes",
        "/dashboard/registry",
        "/dashboard/registry/default/x",
    }


@pytest.mark.parametrize(
    "cookie",
    [
        None,
        "garbage",
        "admin.9999999999.nonce." + "0" * 64,
        auth.issue(environment_key("a-key-this-service-never-had", "admin")),
    ],
)
def test_strangers_are_sent_to_the_login_form(anonymous: TestClient, cookie: str | None) -> None:
    if cookie:
        anonymous.cookies.set(auth.COOKIE_NAME, cookie, domain="testserver.local", path="/")
    for url in dashboard_urls(anonymous):
        response = anonymous.get(url + "?namespace=default", follow_redirects=False)
        assert response.status_code == 303, url
        target = urlsplit(response.headers["location"])
        assert target.path == "/dashboard/login"
        assert parse_qs(target.query)["next"] == [url + "?namespace=default"]
    for url in JSON_URLS:
        assert_error(anonymous.get(url), 401, "unauthorized")


def test_a_valid_cookie_set_the_same_way_is_accepted(anonymous: TestClient) -> None:
    """The control of the test above: cookies set like this do reach the server."""
    token = auth.issue(environment_key(VIEWER_KEY))
    anonymous.cookies.set(auth.COOKIE_NAME, token, domain="testserver.local", path="/")
    for url in dashboard_urls(anonymous):
        assert anonymous.get(url, follow_redirects=False).status_code in (200, 404), url


def test_the_login_form_and_stylesheet_are_public(anonymous: TestClient) -> None:
    form = anonymous.get("/dashboard/login")
    assert form.status_code == 200
    assert 'type="password"' in form.text
    css = anonymous.get("/dashboard/static/dashboard.css")
    assert css.status_code == 200
    assert css.headers["content-type"].startswith("text/css")


def test_an_admin_key_signs_in_with_a_safe_cookie(anonymous: TestClient) -> None:
    response = anonymous.post(
        "/dashboard/login",
        data={"key": ADMIN_KEY, "next": "/dashboard/tools"},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/dashboard/tools"
    cookie = response.headers["set-cookie"]
    flags = {part.strip().lower() for part in cookie.split(";")}
    assert {"httponly", "secure", "samesite=strict", "path=/dashboard"} <= flags
    assert f"max-age={auth.SESSION_SECONDS}" in flags
    assert ADMIN_KEY not in cookie
    page = anonymous.get("/dashboard")
    assert page.status_code == 200
    assert "admin" in page.text


def test_a_dashboard_key_signs_in_read_only(anonymous: TestClient) -> None:
    sign_in(anonymous, VIEWER_KEY)
    page = anonymous.get("/dashboard/registry")
    assert page.status_code == 200
    assert "read-only" in page.text
    assert VIEWER_KEY not in page.text


@pytest.mark.parametrize("key", ["wrong-key-0123456789abcdef", AGENT_KEY, "", "x" * 600])
def test_other_keys_are_refused(anonymous: TestClient, key: str) -> None:
    response = anonymous.post("/dashboard/login", data={"key": key}, follow_redirects=False)
    assert response.status_code in (401, 422)
    assert "set-cookie" not in response.headers
    assert key not in response.text or not key
    assert "Traceback" not in response.text
    assert anonymous.get("/dashboard", follow_redirects=False).status_code == 303


def test_sign_out_clears_the_cookie(anonymous: TestClient) -> None:
    sign_in(anonymous)
    assert anonymous.get("/dashboard/tools").status_code == 200
    response = anonymous.post("/dashboard/logout", follow_redirects=False)
    assert response.status_code == 303
    cookie = response.headers["set-cookie"].lower()
    assert auth.COOKIE_NAME in cookie and "max-age=0" in cookie
    assert anonymous.get("/dashboard/tools", follow_redirects=False).status_code == 303


def test_sign_out_ends_the_session_for_every_copy_of_the_cookie(database_url: str) -> None:
    """The cookie is a signed token: a copy taken before signing out (another tab, a
    leaked header) worked until it expired. The token is now recorded as signed out."""
    from tests.dashboard.conftest import dashboard_client

    with dashboard_client(database_url) as browser, dashboard_client(database_url) as other:
        sign_in(browser)
        sign_in(other)  # another session of the same key
        copy = {"Cookie": f"{auth.COOKIE_NAME}={browser.cookies[auth.COOKIE_NAME]}"}
        anyone = dashboard_client(database_url)
        with anyone:
            assert anyone.get("/dashboard/tools", headers=copy).status_code == 200
            assert browser.post("/dashboard/logout", follow_redirects=False).status_code == 303
            again = anyone.get("/dashboard/tools", headers=copy, follow_redirects=False)
            assert again.status_code == 303  # to the login form
        assert other.get("/dashboard/tools", follow_redirects=False).status_code == 200


@pytest.mark.parametrize(
    "target",
    [
        "https://evil.example/",
        "//evil.example",
        "/v1/tools",
        "/dashboard/../metrics",  # same site, but out of the dashboard by dot segments
        "/dashboard/%2e%2e/%2e%2e/metrics",
        "/dashboard/..//evil.example/",
        "/dashboardx",
    ],
)
def test_login_never_redirects_off_the_dashboard(anonymous: TestClient, target: str) -> None:
    response = anonymous.post(
        "/dashboard/login", data={"key": ADMIN_KEY, "next": target}, follow_redirects=False
    )
    assert response.headers["location"] == "/dashboard"


def test_pages_carry_security_headers(viewer: TestClient) -> None:
    for url in ("/dashboard", "/dashboard/login"):
        response = viewer.get(url)
        csp = response.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src" not in csp
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["x-content-type-options"] == "nosniff"
    assert viewer.get("/dashboard").headers["cache-control"] == "no-store"


def test_a_signed_in_viewer_reads_json_with_the_cookie(viewer: TestClient) -> None:
    assert viewer.get("/dashboard/stats.json").json()["routes"] == 0
    assert viewer.get("/v1/stats", headers=ADMIN).status_code == 200


def test_a_missing_card_is_a_page_not_a_trace(viewer: TestClient) -> None:
    response = viewer.get("/dashboard/registry/default/nope")
    assert response.status_code == 404
    assert "no tool" in response.text and "Traceback" not in response.text
    assert viewer.get("/dashboard/registry/bad%20ns/nope").status_code == 404


@pytest.mark.parametrize(
    "headers",
    [
        {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
        {"Sec-Fetch-Site": "same-site"},  # a sibling subdomain is another site's page too
        {"Origin": "https://evil.example"},  # a browser without Sec-Fetch-Site
    ],
)
def test_signing_in_or_out_from_another_site_is_refused(
    anonymous: TestClient, headers: dict[str, str]
) -> None:
    """A page elsewhere auto-posting the login form would sign the visitor in with the
    attacker's key (login CSRF); posting the logout form would sign them out."""
    forged = anonymous.post(
        "/dashboard/login", data={"key": ADMIN_KEY}, headers=headers, follow_redirects=False
    )
    assert forged.status_code == 403 and "set-cookie" not in forged.headers
    assert "from another site is refused" in forged.text
    sign_in(anonymous)
    out = anonymous.post("/dashboard/logout", headers=headers, follow_redirects=False)
    assert out.status_code == 403 and "set-cookie" not in out.headers
    assert anonymous.get("/dashboard/tools", follow_redirects=False).status_code == 200


def test_our_own_form_signs_in_whatever_origin_the_browser_shows(anonymous: TestClient) -> None:
    """Chromium sends Origin: null from our pages (their no-referrer policy), with
    Sec-Fetch-Site: same-origin; the browser test signs in through the real form."""
    for headers in (
        {"Sec-Fetch-Site": "same-origin", "Origin": "null"},
        {"Origin": "https://testserver"},
        {},
    ):
        answer = anonymous.post(
            "/dashboard/login", data={"key": ADMIN_KEY}, headers=headers, follow_redirects=False
        )
        assert answer.status_code == 303, (headers, answer.text)


def test_the_last_date_there_is_is_a_filter_not_a_500(viewer: TestClient) -> None:
    for path in ("/dashboard", "/dashboard/tools", "/dashboard/stats.json"):
        answer = viewer.get(path, params={"since": "0001-01-01", "until": "9999-12-31"})
        assert answer.status_code == 200, (path, answer.text[:300])


def test_signing_out_the_same_cookie_twice_is_no_error(database_url: str) -> None:
    """Two replicas signing out one cookie at once both inserted its record: the second
    waited for the first's commit, then failed on the key (a 500 on Postgres)."""
    import threading
    import time

    from app.dashboard.signouts import sign_out, signed_out
    from app.db import make_engine, make_session_factory, unit_of_work

    engine = make_engine(database_url)
    factory = make_session_factory(engine)
    inserted, errors = threading.Event(), []

    def replica(first: bool) -> None:
        try:
            with unit_of_work(factory) as session:
                if not first:
                    inserted.wait(5)
                sign_out(session, "tok", 4_000_000_000)
                if first:
                    inserted.set()
                    time.sleep(0.3)  # the other replica's insert meets this uncommitted one
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=replica, args=(f,)) for f in (True, False)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    with unit_of_work(factory) as session:
        assert signed_out(session, "tok")
    engine.dispose()
    assert errors == []
