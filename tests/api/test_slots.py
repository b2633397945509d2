"""Concurrency slots: one more expensive request than a kind's slots is refused at once
(503 overloaded, Retry-After), while routes and cheap reads go on; slots come back."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from app.api import stats as stats_api
from app.dashboard import pages
from app.embedding.encoders import make_encoder
from app.main import create_app
from app.tools import service as tools_service
from tests.api.loop_support import DASHBOARD_KEY, TOOLS, VIEWER
from tests.api.test_tools import weather_card
from tests.conftest import ADMIN, AGENT, make_settings

SIZES = {"reports": 2, "imports": 1, "exports": 1}
# name: (method, path, request arguments, headers, (module, function doing the work), kind)
CASES: dict[str, tuple[str, str, dict[str, Any], dict[str, str], tuple[Any, str], str]] = {
    "stats": ("get", "/v1/stats", {}, VIEWER, (stats_api, "requested_stats"), "reports"),
    "bulk import": (
        "post",
        "/v1/tools/bulk",
        {"json": {"tools": [weather_card(name="slow_import")]}},
        ADMIN,
        (tools_service, "import_tools"),
        "imports",
    ),
    "export": (
        "get",
        "/v1/tools",
        {"params": {"format": "openai"}},
        AGENT,
        (tools_service, "list_tools"),
        "exports",
    ),
    "dashboard": ("get", "/dashboard/stats.json", {}, {}, (pages, "load_stats"), "reports"),
}


@pytest.fixture
def client(database_url: str) -> Iterator[TestClient]:
    settings = make_settings(
        database_url,
        dashboard_keys=(DASHBOARD_KEY,),
        slots_reports=SIZES["reports"],
        slots_imports=SIZES["imports"],
        slots_exports=SIZES["exports"],
    )
    app = create_app(settings, encoder=make_encoder("fake"))
    with TestClient(app, base_url="https://testserver", raise_server_exceptions=False) as client:
        assert client.post("/v1/tools/bulk", json={"tools": TOOLS}, headers=ADMIN).is_success
        signed = client.post("/dashboard/login", data={"key": DASHBOARD_KEY})
        assert signed.status_code in (200, 303), signed.text
        yield client


def held_back(
    monkeypatch: pytest.MonkeyPatch, where: tuple[Any, str]
) -> tuple[threading.Event, threading.Semaphore]:
    """Make the endpoint's work wait for ``gate``; ``entered`` counts requests inside it."""
    module, name = where
    real: Callable[..., Any] = getattr(module, name)
    gate, entered = threading.Event(), threading.Semaphore(0)

    def slow(*args: Any, **kwargs: Any) -> Any:
        entered.release()
        gate.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, slow)
    return gate, entered


@pytest.mark.parametrize("case", CASES)
def test_one_request_past_the_slots_is_refused_at_once_and_routes_go_on(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    method, path, arguments, headers, work, kind = CASES[case]
    gate, entered = held_back(monkeypatch, work)
    answers: list[httpx.Response] = []

    def call() -> None:
        answers.append(client.request(method, path, headers=headers, **arguments))

    slow = [threading.Thread(target=call) for _ in range(SIZES[kind])]
    try:
        for thread in slow:
            thread.start()
        for _ in slow:  # every slot held by a request at work
            assert entered.acquire(timeout=30), "a slow request never started its work"
        start = time.monotonic()
        refused = client.request(method, path, headers=headers, **arguments)
        assert time.monotonic() - start < 10  # at once: only a hang would take this long
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["code"] == "overloaded"
        assert refused.json()["error"]["details"] == {"slots": kind, "limit": SIZES[kind]}
        assert refused.headers["retry-after"] == "1"
        metrics = client.get("/metrics").text
        assert f'toolreach_requests_refused_total{{slots="{kind}"}} 1.0' in metrics
        routed = client.post("/v1/route", json={"query": "weather in Paris"}, headers=AGENT)
        assert routed.status_code == 200, routed.text
        assert client.get("/v1/tools/send_email", headers=AGENT).status_code == 200
        if headers:  # a caller without a key gets its 401, not a 503 (the page: a cookie)
            assert client.request(method, path, **arguments).status_code == 401
    finally:
        gate.set()
        for thread in slow:
            thread.join(timeout=60)
    assert [a.status_code for a in answers] == [200] * SIZES[kind]
    again = client.request(method, path, headers=headers, **arguments)
    assert again.status_code == 200, again.text  # the slots were given back
