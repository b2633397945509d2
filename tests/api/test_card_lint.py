"""Warnings on written cards: POST, PUT and bulk answers carry what the lint found (and the
write still lands), with look-alikes found against the namespace's live vectors."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.api.test_tools import weather_card
from tests.conftest import ADMIN


def test_post_put_and_bulk_carry_warnings(client: TestClient) -> None:
    bare = {"name": "lookup", "description": "Lookup."}
    created = client.post("/v1/tools?namespace=lint", json=bare, headers=ADMIN)
    assert created.status_code == 201
    assert [w["code"] for w in created.json()["warnings"]] == ["purpose_missing"]
    assert set(created.json()["warnings"][0]) == {"code", "message"}

    fixed = {"description": "Look up a customer's address, phone and email by their id."}
    put = client.put("/v1/tools/lookup?namespace=lint", json=fixed, headers=ADMIN)
    assert put.status_code == 200 and put.json()["warnings"] == []

    bad_errors = weather_card(name="w2", errors=[{"code": "e", "meaning": "m"}])
    body = {"namespace": "lint", "tools": [bad_errors]}
    bulk = client.post("/v1/tools/bulk", json=body, headers=ADMIN)
    assert bulk.status_code == 200
    assert {(w["tool"], w["code"]) for w in bulk.json()["warnings"]} == {
        ("w2", "error_no_suggestion")
    }


def test_a_close_lookalike_asks_for_when_not(client: TestClient) -> None:
    text = "Current weather for a city: temperature, wind and rain right now."
    first = weather_card(name="get_city_weather", description=text)
    assert client.post("/v1/tools?namespace=near", json=first, headers=ADMIN).status_code == 201
    twin = weather_card(name="fetch_city_weather", description=text)
    answer = client.post("/v1/tools?namespace=near", json=twin, headers=ADMIN)
    assert answer.status_code == 201
    warnings = answer.json()["warnings"]
    assert [w["code"] for w in warnings] == ["no_when_not"]
    assert "get_city_weather" in warnings[0]["message"]
