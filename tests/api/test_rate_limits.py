"""Rate limits (app/limits/): bad bearer keys and failed sign-ins per client, requests per client
and per key, 429 with Retry-After in the one error shape; shared by replicas through the
database, and still deciding on local counts, without waiting, when the database is frozen or
stopped; X-Forwarded-For believed only from a trusted proxy."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app import migrate
from app.db import make_engine, make_session_factory, unit_of_work
from app.embedding.encoders import make_encoder
from app.limits.counts import Slot
from app.limits.models import RateCount
from app.limits.repository import add_counts, forget_closed, others_counts
from app.main import create_app
from tests.api.loop_support import services_of
from tests.api.own_postgres import OwnPostgres, own_postgres, postgres_bin
from tests.api.test_frozen_database import LIMITS as DATABASE_LIMITS
from tests.api.test_frozen_database import Server, timed
from tests.conftest import ADMIN_KEY, AGENT, empty_database, make_settings
from tests.waiting import until

GUESSER, OTHER = ("198.51.100.1", 4711), ("198.51.100.2", 4711)
BAD = {"Authorization": "Bearer not-a-key-of-this-service-0001"}
STEP = {"query": "weather in Paris"}
VIEWER_KEY = "test-dashboard-key-0123456789"


def app_with(url: str, **overrides: Any) -> Any:
    settings = make_settings(url, dashboard_keys=(VIEWER_KEY,), **overrides)
    return create_app(settings, encoder=make_encoder("fake"))


@pytest.fixture
def guarded(database_url: str) -> Iterator[Any]:
    """An app allowing 5 failed sign-ins per client in 300 s, the rest at the defaults."""
    app = app_with(database_url, auth_failures_per_client=5)
    with TestClient(app, client=GUESSER, raise_server_exceptions=False):
        yield app


def client_of(app: Any, address: tuple[str, int] = GUESSER, **kwargs: Any) -> TestClient:
    """Another client of a started app, from ``address`` (the lifespan is the fixture's)."""
    return TestClient(app, client=address, raise_server_exceptions=False, **kwargs)


def assert_too_many(answer: httpx.Response, limit: str) -> int:
    assert answer.status_code == 429, answer.text
    error = answer.json()["error"]
    assert error["code"] == "too_many_requests" and error["details"]["limit"] == limit
    retry_after = int(answer.headers["Retry-After"])
    assert 1 <= retry_after <= 300 and error["details"]["retry_after"] == retry_after
    return retry_after


def test_bad_keys_are_refused_after_the_limit_even_with_a_good_key(guarded: Any) -> None:
    guesser = client_of(guarded)
    for _ in range(5):
        assert guesser.post("/v1/route", json=STEP, headers=BAD).status_code == 401
    assert_too_many(guesser.post("/v1/route", json=STEP, headers=BAD), "auth")
    assert_too_many(guesser.post("/v1/route", json=STEP, headers=AGENT), "auth")
    assert_too_many(guesser.post("/mcp", json={}, headers=AGENT), "auth")
    assert client_of(guarded, OTHER).get("/v1/tools", headers=AGENT).status_code == 200
    # Probes and metrics are not limited; the refusals are counted there by kind.
    assert guesser.get("/healthz").status_code == 200
    metrics = guesser.get("/metrics").text
    assert 'toolreach_rate_limited_total{kind="auth"} 3.0' in metrics


def test_the_api_description_declares_the_429(guarded: Any) -> None:
    paths = client_of(guarded).get("/openapi.json").json()["paths"]
    declared = {
        path for path, ops in paths.items() if all("429" in o["responses"] for o in ops.values())
    }
    assert declared == {path for path in paths if path.startswith("/v1/")}
    assert "Retry-After" in paths["/v1/route"]["post"]["responses"]["429"]["headers"]


def test_bad_keys_on_mcp_count_too(guarded: Any) -> None:
    guesser = client_of(guarded)
    for _ in range(5):
        assert guesser.post("/mcp", json={}, headers=BAD).status_code == 401
    assert_too_many(guesser.get("/v1/tools", headers=AGENT), "auth")


def test_a_revoked_key_is_a_failed_sign_in(guarded: Any) -> None:
    admin = client_of(guarded, OTHER, headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    made = admin.post("/v1/keys", json={"role": "agent"}).json()
    revoked = {"Authorization": f"Bearer {made['key']}"}
    guesser = client_of(guarded)
    assert guesser.get("/v1/tools", headers=revoked).status_code == 200
    assert admin.delete(f"/v1/keys/{made['id']}").status_code == 204
    for _ in range(5):
        assert guesser.get("/v1/tools", headers=revoked).status_code == 401
    assert_too_many(guesser.get("/v1/tools", headers=revoked), "auth")


def test_guessing_at_the_login_form_gets_429(guarded: Any) -> None:
    form = client_of(guarded, base_url="https://testserver")
    for _ in range(5):
        wrong = form.post("/dashboard/login", data={"key": "x" * 20}, follow_redirects=False)
        assert wrong.status_code == 401
    right = form.post("/dashboard/login", data={"key": VIEWER_KEY}, follow_redirects=False)
    assert right.status_code == 429 and right.headers["content-type"].startswith("text/html")
    assert 1 <= int(right.headers["Retry-After"]) <= 300
    assert "Too many wrong keys from this address" in right.text
    assert "toolreach_dashboard" not in right.headers.get("set-cookie", "")
    # The same address is refused on the API too: one count for every way in.
    assert_too_many(form.get("/v1/tools", headers=AGENT), "auth")
    other = client_of(guarded, OTHER, base_url="https://testserver")
    signed_in = other.post("/dashboard/login", data={"key": VIEWER_KEY}, follow_redirects=False)
    assert signed_in.status_code == 303


def test_requests_per_key_and_per_client(database_url: str) -> None:
    app = app_with(database_url, rate_limit_per_key=4, rate_limit_per_client=6)
    with TestClient(app, client=GUESSER, raise_server_exceptions=False) as one:
        for _ in range(4):
            assert one.get("/v1/tools", headers=AGENT).status_code == 200
        assert_too_many(one.get("/v1/tools", headers=AGENT), "key")
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        assert one.get("/v1/tools", headers=admin).status_code == 200  # another key
        assert client_of(app, OTHER).get("/v1/tools", headers=admin).status_code == 200
        assert one.get("/v1/tools").status_code == 401  # the client's sixth: no key
        assert_too_many(one.get("/v1/tools", headers=admin), "client")
        assert one.get("/readyz").status_code == 200  # probes are never limited


def test_x_forwarded_for_is_ignored_from_an_untrusted_peer(database_url: str) -> None:
    app = app_with(database_url, auth_failures_per_client=3)
    with TestClient(app, client=GUESSER, raise_server_exceptions=False) as guesser:
        for n in range(3):  # a made-up address each time: still one client
            forged = {**BAD, "X-Forwarded-For": f"203.0.113.{n}"}
            assert guesser.get("/v1/tools", headers=forged).status_code == 401
        honest = {**AGENT, "X-Forwarded-For": "203.0.113.99"}
        assert_too_many(guesser.get("/v1/tools", headers=honest), "auth")


def test_x_forwarded_for_is_honoured_from_a_trusted_proxy(database_url: str) -> None:
    proxy = ("10.0.0.5", 4711)
    app = app_with(database_url, auth_failures_per_client=3, trusted_proxies=("10.0.0.0/24",))
    with TestClient(app, client=proxy, raise_server_exceptions=False) as through:
        for n in range(3):  # what the guesser puts first is ignored; the proxy's hop is not
            forged = {**BAD, "X-Forwarded-For": f"203.0.113.{n}, 198.51.100.1"}
            assert through.get("/v1/tools", headers=forged).status_code == 401
        guesser = {**AGENT, "X-Forwarded-For": "198.51.100.1"}
        assert_too_many(through.get("/v1/tools", headers=guesser), "auth")
        other = {**AGENT, "X-Forwarded-For": "198.51.100.2"}
        assert through.get("/v1/tools", headers=other).status_code == 200


def test_the_table_adds_up_each_replicas_counts(database_url: str) -> None:
    """The upsert increments, a replica reads only the others' counts of the open windows,
    and a clean-up deletes only closed windows (Postgres and SQLite)."""
    engine = make_engine(database_url)
    factory = make_session_factory(engine)
    now = {"client": 600, "auth": 300}
    try:
        with unit_of_work(factory) as session:
            add_counts(session, "a", {Slot("client", "x", 600): 2, Slot("auth", "x", 300): 1})
            add_counts(session, "a", {Slot("client", "x", 600): 3})
            add_counts(session, "b", {Slot("client", "x", 600): 4, Slot("client", "x", 540): 9})
        with unit_of_work(factory) as session:
            assert sorted(others_counts(session, "c", now), key=str) == [
                (Slot("auth", "x", 300), 1),
                (Slot("client", "x", 600), 9),  # 2 + 3 from a, 4 from b; not the closed 540
            ]
            assert sorted(others_counts(session, "b", now), key=str) == [
                (Slot("auth", "x", 300), 1),
                (Slot("client", "x", 600), 5),  # a's alone
            ]
            forget_closed(session, now, before=0)
        with unit_of_work(factory) as session:
            left = session.execute(select(RateCount.kind, RateCount.window_start)).all()
            assert sorted(set(left)) == [("auth", 300), ("client", 600)]
    finally:
        engine.dispose()


def test_two_replicas_share_their_counts(postgres_url: str) -> None:
    """3 bad keys on each of two replicas: neither alone reaches 5; together they do."""
    empty_database(postgres_url)
    apps = [
        app_with(postgres_url, auth_failures_per_client=5, rate_limit_flush_seconds=0.2)
        for _ in "ab"
    ]
    with (
        TestClient(apps[0], client=GUESSER, raise_server_exceptions=False) as a,
        TestClient(apps[1], client=GUESSER, raise_server_exceptions=False) as b,
    ):
        for replica in (a, b, a, b, a, b):
            assert replica.get("/v1/tools", headers=BAD).status_code in (401, 429)

        def refused_on_both() -> bool:
            return all(r.get("/v1/tools", headers=AGENT).status_code == 429 for r in (a, b))

        took = until(refused_on_both, seconds=20)  # a couple of flushes: 0.4 s; bound: a hang
        print(f"\nshared within {took:.2f} s")
        assert services_of(a).limiter.count("auth", GUESSER[0]) == 6
        assert client_of(apps[1], OTHER).get("/v1/tools", headers=AGENT).status_code == 200


pytestmark_frozen = pytest.mark.skipif(
    postgres_bin() is None or os.geteuid() != 0,
    reason="needs root and a local PostgreSQL installation to run a cluster of its own",
)


@pytest.fixture
def cluster() -> Iterator[OwnPostgres]:
    with own_postgres() as pg:
        yield pg


def forwarded(client: str, key: dict[str, str]) -> dict[str, str]:
    return {**key, "X-Forwarded-For": client}


def guess_then_try(http: httpx.Client, guesser: str) -> float:
    """4 bad keys from ``guesser`` (401), then its good key (429) and another client's (404:
    answered, in a namespace with no tool); the slowest answer's seconds."""
    answers = [
        timed(lambda: http.get("/v1/tools", headers=forwarded(guesser, BAD))) for _ in "1234"
    ]
    assert [answer.status_code for answer, _ in answers] == [401] * 4
    good, took = timed(lambda: http.post("/v1/route", json=STEP, headers=forwarded(guesser, AGENT)))
    assert_too_many(good, "auth")
    other = forwarded("198.51.100.9", AGENT)
    elsewhere, other_took = timed(lambda: http.post("/v1/route", json=STEP, headers=other))
    assert elsewhere.status_code == 404  # answered from memory: a registry with no tool yet
    return max([took, other_took, *(took for _, took in answers)])


@pytestmark_frozen
def test_a_frozen_or_stopped_database_leaves_the_limits_on_local_counts(
    cluster: OwnPostgres,
) -> None:
    """The server in a real uvicorn, behind "a proxy" (the test: 127.0.0.1 is trusted), so
    each request says which client it stands for. Each answer is decided from memory while
    the database is frozen, then stopped; the counts of that time reach the table after."""
    url = cluster.create_database("toolreach")
    migrate.upgrade(url)
    settings = {
        "auth_failures_per_client": 4,
        "rate_limit_flush_seconds": 0.2,
        "trusted_proxies": ("127.0.0.1",),
        **DATABASE_LIMITS,
    }
    app = app_with(url, **settings)
    with Server(app) as server, server.client() as http:
        limiter = server.services.limiter
        cluster.freeze()
        slowest = guess_then_try(http, "198.51.100.1")
        time.sleep(1.0)  # flushes run into the freeze meanwhile
        assert not limiter.shared
        cluster.thaw()
        until(lambda: limiter.shared, seconds=30)
        cluster.stop()
        slowest = max(slowest, guess_then_try(http, "198.51.100.2"))
        cluster.start()
        until(lambda: limiter.shared, seconds=30)
    # Nothing counted while the database was away is lost: it was written once it was back.
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                select(RateCount.subject, func.sum(RateCount.count))
                .where(RateCount.kind == "auth")
                .group_by(RateCount.subject)
            )
            assert dict(rows.all()) == {"198.51.100.1": 4, "198.51.100.2": 4}
    finally:
        engine.dispose()
    print(f"\nslowest answer with the database frozen or stopped: {slowest:.3f} s")
    assert slowest < 2  # answers from memory take milliseconds; only a hang breaks this
