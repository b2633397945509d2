"""A step of several parts over HTTP (its `parts`, each candidate's `part`, `split: false`)
and several steps in one request (`POST /v1/route/batch`), against both databases
(deterministic fake encoder)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.test_errors_auth import assert_error
from tests.conftest import ADMIN, AGENT

TOOLS: list[dict[str, Any]] = [
    {"name": "weather_now", "description": "Current weather in a city: wind and rain now."},
    {"name": "weather_forecast", "description": "Weather forecast for a city: rain, wind."},
    {"name": "weather_alerts", "description": "Weather alerts for a city: storm, wind, rain."},
    {"name": "create_reminder", "description": "Set a reminder, e.g. remind me to pack."},
    {"name": "send_email", "description": "Send an email message to an address."},
]
STEP = (
    "Will there be rain and wind in Lyon tomorrow, what is the weather forecast for the "
    "city, rain or wind, and remind me to pack an umbrella"
)
PARTS = [
    "Will there be rain and wind in Lyon tomorrow, what is the weather forecast for the "
    "city, rain or wind",
    "remind me to pack an umbrella",
]


@pytest.fixture
def routed(client: TestClient) -> TestClient:
    response = client.post("/v1/tools/bulk", json={"tools": TOOLS}, headers=ADMIN)
    assert response.status_code == 200, response.text
    return client


def route(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/route", json=body, headers=AGENT)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def test_a_step_of_several_parts_says_its_parts_and_each_tools_part(routed: TestClient) -> None:
    answer = route(routed, query=STEP, k=3)
    assert answer["parts"] == PARTS
    parts = [c["part"] for c in answer["candidates"]]
    assert set(parts) == {0, 1}
    reminder = next(c for c in answer["candidates"] if c["name"] == "create_reminder")
    assert reminder["part"] == 1
    confidence = [c["confidence"] for c in answer["candidates"]]
    assert confidence == sorted(confidence, reverse=True)


def test_a_step_of_one_request_has_no_parts(routed: TestClient) -> None:
    answer = route(routed, query="what is the weather forecast in Lyon", k=3)
    assert "parts" not in answer
    assert all("part" not in c for c in answer["candidates"])


def test_split_false_reads_the_step_as_one_request(routed: TestClient) -> None:
    answer = route(routed, query=STEP, k=2, split=False)
    assert "parts" not in answer
    assert [c["name"] for c in answer["candidates"]] == ["weather_forecast", "weather_now"]
    covered = route(routed, query=STEP, k=2)
    assert [c["name"] for c in covered["candidates"]] == ["weather_forecast", "create_reminder"]


@pytest.mark.parametrize("split", ["no", 0, None, [True]])
def test_split_must_be_a_json_boolean(routed: TestClient, split: Any) -> None:
    response = routed.post("/v1/route", json={"query": STEP, "split": split}, headers=AGENT)
    assert_error(response, 422, "invalid_input")


def test_a_batch_answers_each_step_on_its_own_in_order(routed: TestClient) -> None:
    steps = [
        {"query": STEP, "k": 2},
        {"query": "send an email to anna", "k": 1},
        {"query": STEP, "k": 2, "split": False},
    ]
    response = routed.post("/v1/route/batch", json={"steps": steps}, headers=AGENT)
    assert response.status_code == 200, response.text
    answers = response.json()["answers"]
    assert len(answers) == 3 and len({a["route_id"] for a in answers}) == 3
    for step, answer in zip(steps, answers, strict=True):
        alone = route(routed, **step)
        assert [c["name"] for c in answer["candidates"]] == [c["name"] for c in alone["candidates"]]
        assert answer.get("parts") == alone.get("parts")
    # Each step is a route of its own: its choice is reported against its own route_id.
    for answer in answers:
        chosen = answer["candidates"][0]["name"]
        report = {"route_id": answer["route_id"], "chosen": chosen, "outcome": "success"}
        reported = routed.post("/v1/feedback", json=report, headers=AGENT)
        assert reported.status_code == 200, reported.text
        assert reported.json()["verdict"] == "hit_at_1"


@pytest.mark.parametrize(
    "body",
    [
        {"steps": []},
        {"steps": [{"query": "weather"}] * 17},
        {"steps": [{"query": " "}]},
        {"steps": [{"query": "weather", "k": 0}]},
        {"steps": [{"query": "weather"}], "k": 3},
        {"steps": "weather"},
        {},
    ],
    ids=["none", "seventeen", "blank", "k0", "extra", "not-a-list", "empty"],
)
def test_a_bad_batch_is_refused_whole(routed: TestClient, body: dict[str, Any]) -> None:
    response = routed.post("/v1/route/batch", json=body, headers=AGENT)
    assert_error(response, 422, "invalid_input")


def test_sixteen_steps_is_the_limit(routed: TestClient) -> None:
    steps = [{"query": f"weather forecast {n}", "k": 1} for n in range(16)]
    response = routed.post("/v1/route/batch", json={"steps": steps}, headers=AGENT)
    assert response.status_code == 200, response.text
    assert len(response.json()["answers"]) == 16


def test_the_batch_is_in_the_openapi_document(routed: TestClient) -> None:
    document = routed.get("/openapi.json").json()
    assert "/v1/route/batch" in document["paths"]
    schemas = document["components"]["schemas"]
    assert "part" in schemas["RouteCandidate"]["properties"]
    assert "parts" in schemas["RouteResponse"]["properties"]
    assert "split" in schemas["RouteRequest"]["properties"]
