"""Feedback for a route this replica does not know waits for the replica that answered it
(app/loop/feedback.py, ``OtherReplicas``), and that wait is nobody else's cost (issue 38
item 4): it holds no pooled database connection, and each key has only a few at once.

The probe: made-up route ids that look recent (the time of now, random digits), sent in
loops by one tenant's agent keys, made the server hold a pooled connection per request for
the whole wait; the other tenant's feedback then waited for the pool and got 503. Real
Postgres (the wait is Postgres's: SQLite has one process), a real uvicorn, a pool of two.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import httpx
import pytest
import uvicorn

from app.embedding.encoders import make_encoder
from app.main import create_app
from tests.api.loop_support import TOOLS
from tests.api.own_postgres import free_port
from tests.conftest import ADMIN, ADMIN_KEY, empty_database, make_settings

ATTACKERS = [f"team-a-agent-{n}-0123456789" for n in range(3)]
VICTIM = "team-b-agent-key-0123456789"
WAIT = 2.0  # TOOLREACH_FEEDBACK_WAIT_SECONDS (1 by default: longer, so the timing holds under load)
PER_KEY = 2  # TOOLREACH_FEEDBACK_WAITS_PER_KEY, the default
# One client for every thread (a client per request costs more than the request here).
HTTP = httpx.Client(timeout=30, limits=httpx.Limits(max_connections=32))


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def made_up_id() -> str:
    """A route id no replica made, that looks made a moment ago (app/loop/events.py)."""
    return f"{int(time.time() * 1000):012x}{secrets.token_hex(10)}"


@contextmanager
def serving(url: str) -> Iterator[str]:
    """One replica in a real uvicorn (its listener on), a pool of two connections."""
    settings = make_settings(
        url,
        admin_keys=(ADMIN_KEY,),
        agent_keys=(*(f"{k}@team-a" for k in ATTACKERS), f"{VICTIM}@team-b"),
        database_pool_size=2,
        database_max_overflow=0,
        database_pool_timeout=2.0,
        feedback_wait_seconds=WAIT,
        rate_limit_per_key=0,
        rate_limit_per_client=0,
    )
    app = create_app(settings, encoder=make_encoder("fake"))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}"
    try:
        for team in ("team-a", "team-b"):
            body = {"tools": TOOLS, "namespace": team}
            assert httpx.post(f"{base}/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=60)


@pytest.fixture
def server(postgres_url: str) -> Iterator[str]:
    empty_database(postgres_url)
    with serving(postgres_url) as base:
        yield base


def made_up_report(base: str, key: str) -> tuple[int, float]:
    """One report on a made-up recent route id: its status and how long it took."""
    started = time.perf_counter()
    report = {"route_id": made_up_id(), "chosen": "get_weather"}
    response = HTTP.post(f"{base}/v1/feedback", json=report, headers=bearer(key))
    return response.status_code, time.perf_counter() - started


def own_report(base: str) -> tuple[int, float]:
    """The other tenant's route and its report: the report's status and latency."""
    headers = bearer(VICTIM)
    body = {"query": "the weather now in Oslo", "namespace": "team-b"}
    route = HTTP.post(f"{base}/v1/route", json=body, headers=headers).json()
    started = time.perf_counter()
    report = {"route_id": route["route_id"], "chosen": "get_weather", "outcome": "success"}
    response = HTTP.post(f"{base}/v1/feedback", json=report, headers=headers)
    return response.status_code, time.perf_counter() - started


def test_made_up_route_ids_cannot_starve_another_tenant(server: str) -> None:
    """Before: each waiting report held one of the pool's connections for the whole wait;
    the other tenant's reports got 503 after the pool's 2 s timeout."""
    stop = time.monotonic() + 4.0
    seen: list[tuple[int, float]] = []

    def attack(key: str) -> None:
        while time.monotonic() < stop:
            seen.append(made_up_report(server, key))

    with ThreadPoolExecutor(16) as attackers:
        for n in range(16):
            attackers.submit(attack, ATTACKERS[n % len(ATTACKERS)])
        time.sleep(0.5)
        victims = []
        while time.monotonic() < stop - 0.5:
            victims.append(own_report(server))
    assert victims and all(status == 200 for status, _ in victims), victims
    assert max(seconds for _, seconds in victims) < 1.0, victims
    assert {status for status, _ in seen} <= {404, 429}, seen


def test_each_key_waits_for_only_a_few_routes_at_once(server: str) -> None:
    """Ten made-up ids at once from one key: at most ``PER_KEY`` of them wait; the rest are
    429 at once. Another key of the same tenant still gets its own waits."""
    with ThreadPoolExecutor(12) as pool:
        mine = [pool.submit(made_up_report, server, ATTACKERS[0]) for _ in range(10)]
        time.sleep(0.3)
        other = pool.submit(made_up_report, server, ATTACKERS[1])
        answers = [f.result() for f in mine]
        other_status, other_seconds = other.result()
    waited = [seconds for status, seconds in answers if status == 404]
    refused = [seconds for status, seconds in answers if status == 429]
    assert len(waited) == PER_KEY and len(refused) == 10 - PER_KEY, answers
    assert all(seconds >= WAIT * 0.9 for seconds in waited), answers
    assert all(seconds < WAIT / 2 for seconds in refused), answers
    assert other_status == 404 and other_seconds >= WAIT * 0.9
