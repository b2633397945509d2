"""The look-alike report on cards written to be confusable, served from a cache that the
background keeps current, incrementally."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.services import Services
from app.tools import lookalikes as lookalikes_module
from app.tools.lookalike_pairs import differing_fields, hint, keywords
from app.tools.lookalikes import LookalikeCache, lookalikes_in, namespace_pairs
from registry.card import ToolCard
from tests.api.loop_support import VIEWER
from tests.api.test_tools import weather_card
from tests.conftest import ADMIN

CONFUSABLE = [
    weather_card(
        name="get_city_weather",
        description="Current weather for a city: temperature, wind and rain right now.",
    ),
    weather_card(
        name="fetch_city_weather",
        description="Current weather for a city: temperature, wind and rain, right now.",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}},
    ),
    weather_card(
        name="translate_text",
        description="Translate a text into another language. Not for weather.",
        tags=["language"],
    ),
]


def lookalikes(client: TestClient, **params: Any) -> list[dict[str, Any]]:
    """The pairs, once the background has taken in every write (a generous bound)."""
    deadline = time.monotonic() + 30
    while True:
        response = client.get("/v1/lookalikes", params=params, headers=VIEWER)
        assert response.status_code == 200, response.text
        if response.json()["complete"]:
            pairs: list[dict[str, Any]] = response.json()["pairs"]
            return pairs
        assert time.monotonic() < deadline, "the look-alikes were never computed"
        time.sleep(0.05)


def services_of(client: TestClient) -> Services:
    services: Services = client.app.state.services  # type: ignore[attr-defined]
    return services


def test_confusable_cards_are_reported(loop: TestClient) -> None:
    body = {"tools": CONFUSABLE, "namespace": "alike"}
    assert loop.post("/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
    [pair] = lookalikes(loop, namespace="alike", threshold=0.8)
    assert (pair["namespace"], pair["a"], pair["b"]) == (
        "alike",
        "fetch_city_weather",
        "get_city_weather",
    )
    assert 0.8 <= pair["similarity"] <= 1.0
    assert {"city", "weather", "temperature", "wind", "rain"} <= set(pair["shared_keywords"])
    assert "parameters" in pair["differing_fields"] and "tags" not in pair["differing_fields"]
    assert "when not to use me" in pair["hint"]
    everything = lookalikes(loop, threshold=0.0, limit=500)
    floor = services_of(loop).settings.lookalike_floor
    assert everything and min(p["similarity"] for p in everything) >= floor
    assert len([p for p in everything if p["namespace"] == "alike"]) in (2, 3)  # ≥ the floor
    assert [p["similarity"] for p in everything] == sorted(
        (p["similarity"] for p in everything), reverse=True
    )
    unknown = loop.get("/v1/lookalikes", params={"namespace": "alikes"}, headers=VIEWER)
    assert unknown.status_code == 404
    assert unknown.json()["error"]["details"] == {"namespace": "alikes", "did_you_mean": ["alike"]}


def card(name: str, description: str, **extra: Any) -> ToolCard:
    return ToolCard.model_validate({"name": name, "description": description, **extra})


def test_the_hint_names_the_card_that_lacks_the_line() -> None:
    a = card("get_weather", "Current weather. For forecasts use get_weather_forecast.")
    b = card("get_weather_forecast", "Weather in the next days.")
    assert hint(a, b) == (
        "add a 'when not to use me' line to get_weather_forecast naming get_weather; "
        "their parameters are identical: if they do the same thing, merge them"
    )
    both = card("get_weather_forecast", "Weather in the next days; for now use get_weather.")
    assert hint(a, both).startswith("both cards name each other")
    assert differing_fields(a, b) == ["summary", "description"]
    assert keywords(a) >= {"current", "weather", "forecasts"}


def test_a_request_never_computes_it_reads_what_the_background_made(loop: TestClient) -> None:
    """A cache that has not run yet answers at once: no pairs, ``complete: false``."""
    services = services_of(loop)
    idle = LookalikeCache(services.index, neighbours=20, floor=0.0)
    before = lookalikes_in(idle, None, 0.0, 500)
    assert before.pairs == [] and before.complete is False
    assert idle.refresh() == len(services.index.namespaces())
    after = lookalikes_in(idle, None, 0.0, 500)
    assert after.complete is True and after.pairs
    assert [p.similarity for p in after.pairs] == sorted(
        (p.similarity for p in after.pairs), reverse=True
    )


def synthetic(i: int, topic: str) -> dict[str, Any]:
    return weather_card(
        name=f"{topic}_tool_{i:03d}",
        description=f"{topic} report number {i} for a city: {topic} {i % 7} and more {topic}.",
    )


def test_a_write_is_taken_in_incrementally_as_a_full_computation_would(
    loop: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a first full computation, an edit and a deletion update the lists by their rows
    only (no full computation runs) and end where a full computation of the new snapshot
    ends: the same lists, the same pairs."""
    tools = [synthetic(i, topic) for i in range(40) for topic in ("weather", "stock")][:60]
    body = {"tools": tools, "namespace": "many"}
    assert loop.post("/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
    lookalikes(loop, namespace="many", threshold=0.0)
    full_runs: list[int] = []
    real = lookalikes_module.full_neighbours
    monkeypatch.setattr(
        lookalikes_module,
        "full_neighbours",
        lambda unit, m, floor: full_runs.append(len(unit)) or real(unit, m, floor),
    )
    edited = synthetic(3, "stock") | {"name": "weather_tool_003"}
    put = loop.put(
        "/v1/tools/weather_tool_003", json=edited, params={"namespace": "many"}, headers=ADMIN
    )
    assert put.status_code == 200, put.text
    gone = loop.delete("/v1/tools/stock_tool_010", params={"namespace": "many"}, headers=ADMIN)
    assert gone.status_code == 204
    served = lookalikes(loop, namespace="many", threshold=0.0, limit=500)
    assert full_runs == []  # only the changed rows were compared with all
    cache = services_of(loop).lookalikes
    state, current = cache.get("many")
    assert state is not None and current
    full = namespace_pairs(None, state.snapshot, "many", cache.neighbours, cache.floor)
    np.testing.assert_array_equal(state.lists.cols, full.lists.cols)
    np.testing.assert_array_equal(state.lists.sims, full.lists.sims)
    assert [p.model_dump() for p in full.pairs][: len(served)] == served
    assert all("stock_tool_010" not in (p["a"], p["b"]) for p in served)
