"""POST /v1/route over HTTP, against both databases (deterministic fake encoder)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.test_errors_auth import assert_error
from tests.conftest import ADMIN, AGENT

ORDER_ID = {"type": "string", "pattern": "^o[0-9]+$", "description": "the order id"}
TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_order_details",
        "description": "Full detail of one order: items, prices, status. Not for a user's list.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": ORDER_ID},
            "required": ["order_id"],
        },
        "tags": ["orders"],
    },
    {
        "name": "list_user_orders",
        "description": "List the orders of one user, newest first. Not for one order's detail.",
        "parameters": {
            "type": "object",
            "properties": {"user_id": {"type": "string", "description": "the user id"}},
            "required": ["user_id"],
        },
        "tags": ["orders", "users"],
    },
    {
        "name": "get_weather",
        "description": "Current weather in a city: temperature, wind and rain.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
        "tags": ["weather"],
    },
    {"name": "web_search", "description": "Search the web for anything.", "pinned": True},
]


@pytest.fixture
def routed(client: TestClient) -> TestClient:
    response = client.post("/v1/tools/bulk", json={"tools": TOOLS}, headers=ADMIN)
    assert response.status_code == 200, response.text
    return client


def route(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/route", json=body, headers=AGENT)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def test_answer_shape_and_default_k(routed: TestClient) -> None:
    answer = route(routed, query="what is the weather in the city of Paris")
    assert len(answer["route_id"]) == 32
    assert answer["namespace"] == "default"
    assert len(answer["candidates"]) == 3
    first = answer["candidates"][0]
    assert first["name"] == "get_weather"
    # the step asks to read ("what is"): the action vote applies; it holds no value
    assert set(first["stages"]) == {"keyword", "embedding", "prior", "penalty", "action"}
    assert first["score"] == pytest.approx(sum(first["stages"].values()), abs=1e-5)
    assert first["summary"].startswith("Current weather")
    assert "tools" not in answer and "tokens" not in answer


def test_route_ids_are_unique(routed: TestClient) -> None:
    ids = {route(routed, query="weather")["route_id"] for _ in range(5)}
    assert len(ids) == 5


def test_k_and_k_larger_than_registry(routed: TestClient) -> None:
    assert len(route(routed, query="order detail", k=1)["candidates"]) == 1
    assert len(route(routed, query="order detail", k=50)["candidates"]) == len(TOOLS)


def test_missing_required_and_context(routed: TestClient) -> None:
    bare = route(routed, query="show the items and prices of it", k=4)
    by_name = {c["name"]: c for c in bare["candidates"]}
    assert by_name["get_order_details"]["missing_required"] == ["order_id"]
    assert by_name["get_order_details"]["stages"]["penalty"] < 0
    with_id = route(routed, query="show the detail of order o123", k=4)
    assert {c["name"]: c for c in with_id["candidates"]}["get_order_details"][
        "missing_required"
    ] == []
    with_context = route(
        routed, query="show the items and prices of it", k=4, context={"order_id": "o9"}
    )
    detail = {c["name"]: c for c in with_context["candidates"]}["get_order_details"]
    assert detail["missing_required"] == []
    assert detail["stages"]["penalty"] == 0


def test_a_context_value_that_breaks_its_schema_is_reported_and_not_counted(
    routed: TestClient,
) -> None:
    body = {"query": "show the items and prices of it", "k": 4}
    answer = route(routed, **body, context={"order_id": "banana", "city": "Oslo"})
    by_name = {c["name"]: c for c in answer["candidates"]}
    detail = by_name["get_order_details"]
    assert detail["missing_required"] == ["order_id"]
    assert detail["invalid_context"] == [
        {"parameter": "order_id", "reason": "'banana' does not match '^o[0-9]+$'"}
    ]
    assert detail["stages"]["penalty"] < 0
    assert by_name["get_weather"]["invalid_context"] == []  # Oslo is a city
    assert by_name["get_weather"]["missing_required"] == []
    wrong_type = route(routed, **body, context={"order_id": 123})
    detail = {c["name"]: c for c in wrong_type["candidates"]}["get_order_details"]
    assert detail["invalid_context"] == [
        {"parameter": "order_id", "reason": "123 is not of type 'string'"}
    ]


def test_a_mention_of_a_parameter_is_not_a_value(routed: TestClient) -> None:
    answer = route(routed, query="show me the details of an order", k=4)
    detail = {c["name"]: c for c in answer["candidates"]}["get_order_details"]
    assert detail["missing_required"] == ["order_id"]


def test_a_long_step_is_accepted_and_read_by_its_head_and_tail(routed: TestClient) -> None:
    """An agent pasting its conversation: 5,900 characters, the step last."""
    turn = "User: what is the weather in the city of Paris\nAssistant: Mild.\n"
    step = turn * ((5900 - 40) // len(turn)) + "User: the detail of order o123"
    step += "." * (5900 - len(step))
    answer = route(routed, query=step, k=4)
    assert answer["step_read"]["characters"] == 5900
    assert 100 <= answer["step_read"]["head"] <= 125 and 350 <= answer["step_read"]["tail"] <= 375
    detail = {c["name"]: c for c in answer["candidates"]}["get_order_details"]
    assert detail["missing_required"] == []  # o123, at the very end, was read
    assert "step_read" not in route(routed, query="the detail of order o123")


def test_a_step_as_long_as_the_body_allows_is_routed(routed: TestClient) -> None:
    step = "weather in Paris " * 55_000  # 935,000 characters, under the 1 MiB body limit
    answer = route(routed, query=step)
    assert answer["step_read"]["characters"] == len(step)
    assert answer["candidates"][0]["name"] == "get_weather"


def test_tags_filter(routed: TestClient) -> None:
    answer = route(routed, query="orders", k=10, tags=["users"])
    assert [c["name"] for c in answer["candidates"]] == ["list_user_orders"]
    assert route(routed, query="orders", tags=["nothing-has-this"])["candidates"] == []


def test_min_score_returns_fewer(routed: TestClient) -> None:
    full = route(routed, query="weather in Paris city", k=4)["candidates"]
    between = (full[1]["score"] + full[2]["score"]) / 2  # answers show rounded scores
    assert full[1]["score"] > between > full[2]["score"]
    fewer = route(routed, query="weather in Paris city", k=4, min_score=between)["candidates"]
    assert [c["name"] for c in fewer] == [c["name"] for c in full[:2]]
    assert route(routed, query="weather in Paris city", k=4, min_score=10.0)["candidates"] == []
    for shown in full:  # a score as shown passes as min_score (float32 underneath)
        at = route(routed, query="weather in Paris city", k=4, min_score=shown["score"])
        assert shown["name"] in [c["name"] for c in at["candidates"]], shown


def test_each_candidate_has_a_confidence_and_the_answer_a_fit(routed: TestClient) -> None:
    answer = route(routed, query="weather in Paris city", k=4)
    assert answer["fit"] == "ok"
    assert all(0.001 <= c["confidence"] <= 0.999 for c in answer["candidates"])


def test_min_confidence_empties_an_answer_with_fit_none(routed: TestClient) -> None:
    """The fake encoder's numbers are not the real model's: the test holds at the ends of
    the range and at the shown values, whatever they are."""
    full = route(routed, query="weather in Paris city", k=4)
    assert (
        route(routed, query="weather in Paris city", k=4, min_confidence=0)["candidates"]
        == (full["candidates"])
    )
    nothing = route(routed, query="weather in Paris city", k=4, min_confidence=1.0)
    assert nothing["candidates"] == [] and nothing["fit"] == "none"
    shown = sorted({c["confidence"] for c in full["candidates"]})
    for cut in shown:  # a confidence as shown passes as min_confidence
        kept = route(routed, query="weather in Paris city", k=4, min_confidence=cut)
        assert kept["fit"] == "ok"
        assert kept["candidates"] == [c for c in full["candidates"] if c["confidence"] >= cut]
    above = route(routed, query="weather in Paris city", k=4, min_confidence=shown[-1] + 0.001)
    assert above["candidates"] == [] and above["fit"] == "none"


def test_an_empty_answer_says_nothing_fits(routed: TestClient) -> None:
    assert route(routed, query="orders", tags=["nothing-has-this"])["fit"] == "none"
    assert route(routed, query="weather", min_score=10.0)["fit"] == "none"


def test_nothing_matches_by_keyword_still_answers(routed: TestClient) -> None:
    answer = route(routed, query="zzqx vvbn")
    assert answer["candidates"], "falls back to dense retrieval and the pinned defaults"


@pytest.mark.parametrize(
    ("fmt", "key"), [("openai", "function"), ("anthropic", "input_schema"), ("mcp", "inputSchema")]
)
def test_formats_and_token_estimate(routed: TestClient, fmt: str, key: str) -> None:
    answer = route(routed, query="weather in Paris", k=2, format=fmt)
    assert len(answer["tools"]) == 2
    assert all(key in tool for tool in answer["tools"])
    tokens = answer["tokens"]
    assert 0 < tokens["returned"] < tokens["namespace_total"]
    assert tokens["saved"] == tokens["namespace_total"] - tokens["returned"]
    assert "characters / 4" in tokens["method"]


def test_empty_registry_and_unknown_namespace(client: TestClient) -> None:
    for body in ({"query": "anything"}, {"query": "x", "namespace": "nobody", "format": "openai"}):
        answer = client.post("/v1/route", json=body, headers=AGENT)
        assert answer.status_code == 404, answer.text
        assert answer.json()["error"]["details"]["did_you_mean"] == []


def test_a_namespace_whose_tools_are_gone_answers_that_nothing_fits(routed: TestClient) -> None:
    one = {"tools": [{"name": "ping", "description": "Checks liveness."}], "namespace": "solo"}
    assert routed.post("/v1/tools/bulk", json=one, headers=ADMIN).status_code == 200
    assert routed.delete("/v1/tools/ping?namespace=solo", headers=ADMIN).status_code == 204
    empty = route(routed, query="weather", namespace="solo", format="openai")
    assert empty["candidates"] == [] and empty["tools"] == [] and empty["fit"] == "none"


def test_namespace_with_one_tool(routed: TestClient) -> None:
    one = {"tools": [{"name": "ping", "description": "Checks liveness."}], "namespace": "solo"}
    assert routed.post("/v1/tools/bulk", json=one, headers=ADMIN).status_code == 200
    answer = route(routed, query="weather", namespace="solo", k=5)
    assert [c["name"] for c in answer["candidates"]] == ["ping"]


def test_a_written_card_is_routable_at_once(routed: TestClient) -> None:
    card = {"name": "convert_currency", "description": "Convert money between currencies."}
    assert routed.post("/v1/tools", json=card, headers=ADMIN).status_code == 201
    assert route(routed, query="convert currencies money")["candidates"][0]["name"] == (
        "convert_currency"
    )
    assert routed.delete("/v1/tools/convert_currency", headers=ADMIN).status_code == 204
    names = [c["name"] for c in route(routed, query="convert currencies", k=10)["candidates"]]
    assert "convert_currency" not in names


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"query": ""},
        {"query": "   "},  # only whitespace: as empty
        {"query": "\n\t \u3000"},
        {"query": "ok", "k": 0},
        {"query": "ok", "k": 51},
        {"query": "ok", "format": "xml"},
        {"query": "ok", "context": [1]},
        {"query": "ok", "namespace": "bad space"},
        {"query": "ok", "surprise": True},
        {"query": 5},
        {"query": "ok", "k": "3"},  # pydantic would read these as numbers
        {"query": "ok", "k": True},
        {"query": "ok", "min_score": "0.5"},
        {"query": "ok", "min_confidence": "0.5"},
        {"query": "ok", "min_confidence": 1.5},
        {"query": "ok", "min_confidence": -0.1},
        {"query": "ok", "min_confidence": True},
    ],
)
def test_bad_input_has_the_one_error_shape(routed: TestClient, body: dict[str, Any]) -> None:
    assert_error(routed.post("/v1/route", json=body, headers=AGENT), 422, "invalid_input")


@pytest.mark.parametrize("number", ["NaN", "-Infinity"])
@pytest.mark.parametrize("field", ["min_score", "min_confidence"])
def test_a_threshold_that_is_not_finite_is_refused(
    routed: TestClient, number: str, field: str
) -> None:
    """Python's json reads NaN; as min_score it removed every candidate, silently."""
    body = '{"query": "weather in Paris", "' + field + '": ' + number + "}"
    headers = {**AGENT, "Content-Type": "application/json"}
    answer = routed.post("/v1/route", content=body, headers=headers)
    assert_error(answer, 422, "invalid_input")
    assert "finite" in answer.text


def test_route_needs_an_agent_key_when_keys_are_set(routed: TestClient) -> None:
    assert_error(routed.post("/v1/route", json={"query": "x"}), 401, "unauthorized")


def test_a_name_openai_refuses_is_exported_to_fit_and_accepted_back(client: TestClient) -> None:
    """'billing:refund.v2' in a request's tools is refused by OpenAI's API; the route exports
    a name that fits, says which tool it is, and validate and feedback take it back."""
    card = {"name": "billing:refund.v2", "description": "Refund a paid invoice to the customer."}
    assert client.post("/v1/tools", json=card, headers=ADMIN).status_code == 201
    answer = route(client, query="refund the invoice", format="openai")
    exported = answer["tools"][0]["function"]["name"]
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", exported), exported
    assert answer["candidates"][0]["name"] == "billing:refund.v2"
    assert answer["tool_names"] == {exported: "billing:refund.v2"}
    assert "tool_names" not in route(client, query="refund the invoice")  # raw: no tools
    call = {"name": exported, "arguments": {}, "route_id": answer["route_id"]}
    checked = client.post("/v1/validate", json=call, headers=AGENT).json()
    assert checked["valid"] is True, checked
    report = {"route_id": answer["route_id"], "chosen": exported, "outcome": "success"}
    recorded = client.post("/v1/feedback", json=report, headers=AGENT)
    assert recorded.status_code == 200, recorded.text
    assert recorded.json()["chosen"] == "billing:refund.v2"  # by its card name
    assert recorded.json()["verdict"] == "hit_at_1"
