"""Bounded influence (app/loop/trust.py) through the service: one key's reports steer its own
routes, and other keys' only as far as other keys agree.

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
    services.prior.refresh()


def firsts(client: TestClient, key: dict[str, str]) -> list[str]:
    return [first(client, step, key)[1] for step in STEPS]


def test_one_key_steers_every_key_without_the_bound(unbounded: TestClient) -> None:
    before = firsts(unbounded, VICTIM)
    poison(unbounded, POISONER)
    refresh(unbounded)
    after = firsts(unbounded, VICTIM)
    assert WRONG not in before
    assert sum(a == b for a, b in zip(after, before, strict=True)) == 1  # the defect: 1/20


def test_one_key_steers_only_its_own_routes(bounded: TestClient) -> None:
    before = firsts(bounded, VICTIM)
    assert WRONG not in before
    poison(bounded, POISONER, flood=3)  # a flood: each step reported three times
    refresh(bounded)
    assert firsts(bounded, VICTIM) == before  # another key's routes hold
    _, _, stages = first(bounded, STEPS[0], VICTIM)
    assert 0 < stages["memory"] <= 1 / 3 + 1e-6  # memory_weight / trust_keys at most
    assert firsts(bounded, POISONER).count(WRONG) == 19  # its own routes: full weight
    _, _, own = first(bounded, STEPS[0], POISONER)
    assert own["memory"] == pytest.approx(1.0)


def test_what_enough_keys_agree_on_counts_for_every_key(bounded: TestClient) -> None:
    poison(bounded, POISONER)
    poison(bounded, SECOND)
    refresh(bounded)
    _, _, two = first(bounded, STEPS[0], VICTIM)
    assert two["memory"] == pytest.approx(2 / 3, abs=1e-3)  # two keys of three
    poison(bounded, THIRD)
    refresh(bounded)
    _, _, three = first(bounded, STEPS[0], VICTIM)
    assert three["memory"] == pytest.approx(1.0, abs=1e-3)  # confirmed: full weight
    assert firsts(bounded, VICTIM) == [WRONG] * 20  # and the three keys' prior


def test_the_prior_counts_a_flood_once_and_other_keys_shares(bounded: TestClient) -> None:
    poison(bounded, POISONER, flood=3)
    refresh(bounded)
    prior = services_of(bounded).prior
    shared = prior.get("default")
    assert shared is not None
    own = prior.get("default", services_of(bounded).keys.caller(KEYS[0]).key_id)
    assert own is not None
    # 20 distinct steps, each once (the flood of 60 reports is 20 uses): for the poisoner
    # saturate(20), for any other key saturate(20 / 3).
    assert own[WRONG] == pytest.approx(20 / 25, abs=1e-3)
    assert shared[WRONG] == pytest.approx((20 / 3) / (20 / 3 + 5), abs=1e-3)
