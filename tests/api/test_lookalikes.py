"""The look-alike report on cards written to be confusable."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from app.tools.lookalikes import differing_fields, hint, keywords
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
    response = client.get("/v1/lookalikes", params=params, headers=VIEWER)
    assert response.status_code == 200, response.text
    pairs: list[dict[str, Any]] = response.json()["pairs"]
    return pairs


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
    assert len([p for p in everything if p["namespace"] == "alike"]) == 3
    assert [p["similarity"] for p in everything] == sorted(
        (p["similarity"] for p in everything), reverse=True
    )
    assert lookalikes(loop, namespace="nobody") == []


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
