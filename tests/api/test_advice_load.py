"""The card doctor cannot starve another tenant (issue 38 item 3): ``GET /v1/advice`` is
computed off the request path, on one thread, cached per namespace, bounded per key and in
time, and holds no database connection while it replays.

The probe: sixteen advice requests at once from one tenant's dashboard (read-only) key, each
a replay holding a pooled connection idle in a transaction, made the other tenant's ``GET
/v1/tools`` and ``POST /v1/feedback`` answer 503 until restart; SIGTERM did not stop the
server. Here: real Postgres, a real uvicorn, a pool of two connections, two tenants with
their own keys; only generous time bounds are asserted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import httpx
import numpy as np
import uvicorn

from app.advice.finding import Case
from app.advice.service import Budget, compute
from app.embedding.encoders import make_encoder
from app.main import create_app
from app.routing import RouterConfig, RouterIndex, embedding_text
from app.tools.catalog import card_to_doc
from app.tools.live_index import Snapshot
from registry.card import ToolCard
from tests.api.loop_support import TOOLS
from tests.api.own_postgres import free_port
from tests.conftest import ADMIN, ADMIN_KEY, empty_database, make_settings

REPORTERS = [f"team-a-agent-{n}-0123456789" for n in range(3)]
VIEWER = "team-a-dashboard-0123456789"
VICTIM = "team-b-agent-key-0123456789"
HTTP = httpx.Client(timeout=60, limits=httpx.Limits(max_connections=40))
CITIES = ("Oslo", "Rome", "Lima", "Kyiv", "Cairo", "Quito", "Dakar", "Hanoi", "Bern", "Riga")
STEPS = [
    *(f"what is the weather in {c} now" for c in CITIES),
    *(f"will it rain in {c} next week" for c in CITIES),
    *(f"send the weekly report on {c} by email" for c in CITIES),
    *(f"how many dollars is 100 euros in {c}" for c in CITIES),
]


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@contextmanager
def serving(url: str) -> Iterator[tuple[str, threading.Thread, uvicorn.Server]]:
    settings = make_settings(
        url,
        admin_keys=(ADMIN_KEY,),
        agent_keys=(*(f"{k}@team-a" for k in REPORTERS), f"{VICTIM}@team-b"),
        dashboard_keys=(f"{VIEWER}@team-a",),
        database_pool_size=2,
        database_max_overflow=0,
        database_pool_timeout=2.0,
        rate_limit_per_key=0,
        rate_limit_per_client=0,
        advice_fresh_seconds=0,  # every request asks for a computation
    )
    app = create_app(settings, encoder=make_encoder("fake"))
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="error")
    )
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    base = f"http://127.0.0.1:{server.config.port}"
    try:
        for team in ("team-a", "team-b"):
            body = {"tools": TOOLS, "namespace": team}
            assert HTTP.post(f"{base}/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
        yield base, thread, server
    finally:
        server.should_exit = True
        thread.join(timeout=60)


def report(base: str, key: str, namespace: str, query: str, chosen: str) -> tuple[int, float]:
    """Route ``query`` and report ``chosen``: the report's status and latency."""
    body = {"query": query, "namespace": namespace, "k": 1}
    route = HTTP.post(f"{base}/v1/route", json=body, headers=bearer(key)).json()
    started = time.perf_counter()
    answer = {"route_id": route["route_id"], "chosen": chosen, "outcome": "success"}
    response = HTTP.post(f"{base}/v1/feedback", json=answer, headers=bearer(key))
    return response.status_code, time.perf_counter() - started


def victim(base: str) -> list[tuple[int, float]]:
    """The other tenant's list of tools and one report: statuses and latencies."""
    started = time.perf_counter()
    tools = HTTP.get(f"{base}/v1/tools?namespace=team-b", headers=bearer(VICTIM))
    listed = (tools.status_code, time.perf_counter() - started)
    return [listed, report(base, VICTIM, "team-b", "the weather in Oslo now", "get_weather")]


def test_advice_requests_cannot_starve_another_tenant(postgres_url: str) -> None:
    empty_database(postgres_url)
    with serving(postgres_url) as (base, thread, server):
        names = [t["name"] for t in TOOLS]
        for n, step in enumerate(STEPS * 3):  # every step by three keys, many misroutes
            key = REPORTERS[n % 3]
            assert report(base, key, "team-a", step, names[(n // 3) % len(names)])[0] == 200
        stop = time.monotonic() + 8.0
        seen: list[int] = []

        def attack() -> None:
            while time.monotonic() < stop:
                url = f"{base}/v1/advice?namespace=team-a"
                seen.append(HTTP.get(url, headers=bearer(VIEWER)).status_code)

        with ThreadPoolExecutor(16) as attackers:
            for _ in range(16):
                attackers.submit(attack)
            time.sleep(1.0)
            answers: list[tuple[int, float]] = []
            while time.monotonic() < stop - 1.0:
                answers += victim(base)
        assert answers and all(status == 200 for status, _ in answers), answers
        assert max(seconds for _, seconds in answers) < 3.0, answers
        assert 200 in seen and set(seen) <= {200, 429}, sorted(set(seen))
        answer = HTTP.get(f"{base}/v1/advice?namespace=team-a", headers=bearer(VIEWER)).json()
        assert answer["steps"] == len(STEPS) * 3 and answer["misroutes"] > 0, answer
        started = time.monotonic()
        HTTP.get(f"{base}/v1/advice?namespace=team-a", headers=bearer(VIEWER))
        server.should_exit = True  # as SIGTERM does
        thread.join(timeout=30)
        assert not thread.is_alive() and time.monotonic() - started < 15


class Slow:
    """The fake encoder, 50 ms a call: a computation that would run for minutes."""

    def __init__(self) -> None:
        self.inner = make_encoder("fake")
        self.name, self.dim = self.inner.name, self.inner.dim

    def encode(self, texts: list[str]) -> np.ndarray:
        time.sleep(0.05)
        return self.inner.encode(texts)


def test_a_stop_ends_a_computation_at_once() -> None:
    """The service's shutdown sets the budget's stop: the computation ends at its next
    route, incomplete, whatever its time budget."""
    encoder = Slow()
    cards = {t["name"]: ToolCard(**t) for t in TOOLS}
    docs = [card_to_doc(cards[n]) for n in sorted(cards)]
    index = RouterIndex.build(
        docs, encoder.encode([embedding_text(d) for d in docs]), RouterConfig()
    )
    names = sorted(cards)
    cases = [
        Case(f"{s} #{n}", names[0], names[(n % 3) + 1], True, REPORTERS[n % 3])
        for n, s in enumerate(STEPS * 50)
    ]
    budget = Budget(seconds=3600)
    threading.Timer(1.0, budget.stop.set).start()
    started = time.monotonic()
    advice = compute(Snapshot(index, cards), encoder, "team-a", (cases, {}), 3, budget)
    assert time.monotonic() - started < 3.0
    assert not advice.complete
