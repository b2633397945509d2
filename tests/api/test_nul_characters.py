"""A NUL character (U+0000) anywhere in a request is refused with 422, never a 500.

PostgreSQL's text and JSON columns cannot hold U+0000 (SQLite can): such a value reached the
database as a 500 from GET /v1/tools?tag=..., and a route query holding one stalled the route
event writer, which retried its whole batch for ever while new events were dropped.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.api.test_tools import weather_card
from tests.conftest import ADMIN, AGENT

NUL = "\x00"


def refused(response: object, where: str) -> None:
    assert response.status_code == 422, response.text  # type: ignore[attr-defined]
    error = response.json()["error"]  # type: ignore[attr-defined]
    assert error["code"] == "invalid_input"
    assert where in error["message"] + str(error["details"])


@pytest.fixture
def registered(client: TestClient) -> TestClient:
    assert client.post("/v1/tools", json=weather_card(), headers=ADMIN).status_code == 201
    return client


def test_a_route_query_with_nul_is_refused_and_events_keep_flowing(registered: TestClient) -> None:
    refused(
        registered.post("/v1/route", json={"query": f"weather{NUL} in Paris"}, headers=AGENT),
        "query",
    )
    answer = registered.post("/v1/route", json={"query": "weather in Paris"}, headers=AGENT)
    assert answer.status_code == 200
    events = registered.app.state.services.events  # type: ignore[attr-defined]
    assert events.flush() == 1 and events.buffered == 0


def test_bodies_with_nul_anywhere_are_refused(registered: TestClient) -> None:
    card = weather_card(name="other", description=f"Weather{NUL} now.")
    refused(registered.post("/v1/tools", json=card, headers=ADMIN), "description")
    card = weather_card(name="other")
    card["parameters"]["properties"]["city"]["description"] = f"a{NUL}b"
    refused(registered.post("/v1/tools", json=card, headers=ADMIN), "parameters")
    routed = registered.post("/v1/route", json={"query": "weather"}, headers=AGENT).json()
    report = {"route_id": routed["route_id"], "chosen": None, "outcome": "error"}
    report["error_code"] = f"E{NUL}1"
    refused(registered.post("/v1/feedback", json=report, headers=AGENT), "error_code")
    call = {"name": "get_weather", "arguments": {"city": f"Pa{NUL}ris"}}
    refused(registered.post("/v1/validate", json=call, headers=AGENT), "arguments")


@pytest.mark.parametrize(
    "url",
    ["/v1/tools?tag=a%00b", "/v1/tools?text=%00", "/v1/tools/get%00weather", "/v1/stats?tool=%00"],
)
def test_urls_with_nul_are_refused(registered: TestClient, url: str) -> None:
    refused(registered.get(url, headers=ADMIN), "NUL")
