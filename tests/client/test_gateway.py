"""``POST /v1/call`` and ``/v1/call/batch`` (the gateway): the contract as the service
defines it (app/gateway/schemas.py), replayed; and live."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from toolreach_client import CallRequest, ToolCallError, ToolReach

from tests.client.conftest import settled_stats

NOT_SHIPPED = {
    "ok": False,
    "name": "track_shipment",
    "namespace": "shop",
    "error": {
        "code": "NOT_YET_SHIPPED",
        "message": "order o100234 has not shipped",
        "retryable": False,
        "suggestion": "Call get_order_details to tell the user the order status.",
    },
    "route_id": "r1",
    "attempts": 1,
    "latency_ms": 12.5,
}
TRACKED = {"ok": True, "name": "track_shipment", "namespace": "shop", "result": {"eta": "Fri"}}
ROUTE = {
    "route_id": "r1",
    "namespace": "shop",
    "model": "fake",
    "candidates": [
        {
            "name": "track_shipment",
            "summary": "Track a parcel.",
            "score": 1.0,
            "stages": {"keyword": 0.5, "embedding": 0.5},
            "missing_required": [],
        }
    ],
}


def replay(*answers: dict[str, Any]) -> tuple[ToolReach, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(answers)

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=queue.pop(0))

    client = ToolReach("http://t.test", namespace="shop", transport=httpx.MockTransport(answer))
    return client, seen


def test_a_failed_call_is_an_answer_and_raises_only_when_asked() -> None:
    client, seen = replay(NOT_SHIPPED)
    result = client.call("track_shipment", {"order_id": "o100234"}, route_id="r1")
    assert not result.ok and result.error is not None and result.error.code == "NOT_YET_SHIPPED"
    assert json.loads(seen[0].content) == {
        "name": "track_shipment",
        "arguments": {"order_id": "o100234"},
        "namespace": "shop",
        "route_id": "r1",
    }
    with pytest.raises(ToolCallError) as failed:
        result.raise_for_error()
    assert failed.value.suggestion == NOT_SHIPPED["error"]["suggestion"]  # type: ignore[index]


def test_a_step_calls_through_the_gateway_and_that_is_its_report() -> None:
    client, seen = replay(ROUTE, TRACKED)
    step = client.route("where is my parcel")
    assert step.call("track_shipment", {"order_id": "o100234"}).result == {"eta": "Fri"}
    assert json.loads(seen[1].content)["route_id"] == "r1"
    assert step.report("track_shipment", "success") is None and len(seen) == 2


def test_a_batch_keeps_every_result() -> None:
    batch = {"results": [TRACKED, NOT_SHIPPED], "succeeded": 1, "failed": 1}
    client, seen = replay(batch)
    answer = client.call_batch(
        [
            {"name": "track_shipment", "arguments": {"order_id": "o100235"}},
            CallRequest(name="track_shipment", arguments={"order_id": "o100234"}),
        ]
    )
    assert [r.ok for r in answer.results] == [True, False] and answer.failed == 1
    sent = json.loads(seen[0].content)["calls"]
    assert [c["namespace"] for c in sent] == ["shop", "shop"]


def test_live_gateway_answers_in_the_contract(
    agent: ToolReach, admin: ToolReach, namespace: str
) -> None:
    step = agent.route("current weather in Paris", format="openai")
    unknown = step.call("get_weather_now", {"location": "Paris, FR"})
    assert unknown.error is not None and unknown.error.code == "unknown_tool"
    assert "get_current_weather" in unknown.error.details["did_you_mean"]
    assert not step.recorded_by_call
    invalid = step.call("get_current_weather", {"place": "Paris"})
    assert invalid.error is not None and invalid.error.code == "invalid_arguments"
    assert step.recorded_by_call  # a real tool: the gateway recorded the route's report
    # The demo cards were written by hand: no source to forward to.
    batch = agent.call_batch(
        [{"name": "get_current_weather", "arguments": {"location": "Paris, FR"}}] * 2
    )
    assert [r.error.code for r in batch.results if r.error] == ["not_callable"] * 2
    stats = settled_stats(admin, namespace, routes=1, feedback=1)
    assert (stats.routes, stats.feedback) == (1, 1)
