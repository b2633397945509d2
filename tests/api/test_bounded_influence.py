"""Bounded influence (app/loop/trust.py) through the service: reports weigh in query memory
as far as other keys agree, and move no route without a promoted model
(a model's bounds: tests/api/test_learning_trust.py).

The probe of issue 27 item 11: one key routes 20 steps and reports a wrong tool for each
with ``success``; another key routes the same steps. Real Postgres and SQLite, the HTTP
surface (TestClient), the fake encoder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.embedding.encoders import make_encoder
from app.main import create_app
from tests.api.loop_support import TOOLS, services_of
from tests.conftest import ADMIN, make_settings

KEYS = [f"test-agent-key-{n}-0123456789" for n in range(4)]
POISONER, VICTIM, SECOND, THIRD = ({"Authorization": f"Bearer {k}"} for k in KEYS)
STEPS = [f"the weather forecast for the next days in city number {n}" for n in range(20)]
WRONG = "get_weather"  # the look-alike: current weather, not the forecast


def service(database_url: str, trust_keys: int) -> Iterator[TestClient]:
    settings = make_settings(
        database_url,
        agent_keys=tuple(KEYS),
        event_flush_seconds=3600,
        prior_refresh_seconds=3600,
        trust_keys=trust_keys,
    )
    app = create_app(settings, encoder=make_encoder("fake"))
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.post("/v1/tools/bulk", json={"tools": TOOLS}, headers=ADMIN)
        assert response.status_code == 200, response.text
        yield client


@pytest.fixture
def bounded(database_url: str) -> Iterator[TestClient]:
    yield from service(database_url, trust_keys=3)  # the default


@pytest.fixture
def unbounded(database_url: str) -> Iterator[TestClient]:
    yield from service(database_url, trust_keys=1)  # every report counts for every key


def first(client: TestClient, step: str, key: dict[str, str]) -> tuple[str, str, dict]:  # type: ignore[type-arg]
    """(route id, first tool, the wrong tool's stages) of one route by ``key``."""
    body = {"query": step, "k": 4, "namespace": "default"}
    response = client.post("/v1/route", json=body, headers=key)
    assert response.status_code == 200, response.text
    answer = response.json()
    wrong = next(c["stages"] for c in answer["candidates"] if c["name"] == WRONG)
    return answer["route_id"], answer["candidates"][0]["name"], wrong


def poison(client: TestClient, key: dict[str, str], flood: int = 1) -> None:
    """``key`` routes each step (``flood`` times) and reports the wrong tool a success."""
    for step in STEPS:
        for _ in range(flood):
            route_id, _, _ = first(client, step, key)
            body = {"route_id": route_id, "chosen": WRONG, "outcome": "success"}
            response = client.post("/v1/feedback", json=body, headers=key)
            assert response.status_code == 200, response.text


def refresh(client: TestClient) -> None:
    services = services_of(client)
    services.events.flush()
    assert services.memory is not None
    services.memory.refresh()


def firsts(client: TestClient, key: dict[str, str]) -> list[str]:
    return [first(client, step, key)[1] for step in STEPS]


def test_without_a_model_reports_steer_no_route_even_unbounded(unbounded: TestClient) -> None:
    """Before issue 41 this moved 19 of 20 of another key's routes (memory and the prior were
    stages of their own); now they reach routes only through a promoted model."""
    before = firsts(unbounded, VICTIM)
    poison(unbounded, POISONER)
    refresh(unbounded)
    assert WRONG not in before
    assert firsts(unbounded, VICTIM) == before
    assert "memory" not in first(unbounded, STEPS[0], VICTIM)[2]


def test_one_keys_flood_moves_no_route_without_a_model(bounded: TestClient) -> None:
    before = firsts(bounded, VICTIM)
    assert WRONG not in before
    poison(bounded, POISONER, flood=3)  # a flood: each step reported three times
    refresh(bounded)
    assert firsts(bounded, VICTIM) == before  # another key's routes hold
    assert firsts(bounded, POISONER) == before  # and its own: no model was promoted


def test_what_enough_keys_agree_on_still_needs_the_guard(bounded: TestClient) -> None:
    before = firsts(bounded, VICTIM)
    for key in (POISONER, SECOND, THIRD):
        poison(bounded, key)
    refresh(bounded)
    assert firsts(bounded, VICTIM) == before  # confirmed, but no model: the cold ranking
