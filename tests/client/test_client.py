"""The sync client against the real service: a step's whole loop, exported names, the
tools API, and every error as its typed exception carrying the service's error shape."""

from __future__ import annotations

import pytest
from toolreach_client import (
    Conflict,
    InvalidInput,
    NotFound,
    RetryPolicy,
    Step,
    ToolReach,
    TransportError,
    Unauthorized,
)

from tests.client.conftest import AGENT_KEY, DEMO, Service, settled_stats


def test_a_step_routes_validates_and_reports(
    agent: ToolReach, admin: ToolReach, namespace: str
) -> None:
    step = agent.route("what is the weather in Paris right now", k=2, format="openai")
    assert isinstance(step, Step) and step.namespace == namespace
    assert step.names[0] == "get_current_weather" and len(step.tools) == 2
    assert step.tools[0]["function"]["name"] == "get_current_weather"
    assert step.answer.tokens is not None and step.answer.tokens.saved > 0

    wrong = step.validate("get_weather_now", {"location": "Paris, FR"})
    assert not wrong.valid and "get_current_weather" in wrong.did_you_mean
    bad = step.validate("get_current_weather", {"location": "Paris, FR", "unit": "C"})
    assert not bad.valid and "'unit' was unexpected" in bad.explain()
    assert step.validate("get_current_weather", {"location": "Paris, FR"}).valid

    report = step.report("get_current_weather", "success")
    assert report is not None and (report.verdict, report.rank) == ("hit_at_1", 1)
    assert step.report("get_current_weather", "success") == report  # a repeat is the same record
    with pytest.raises(Conflict) as conflict:
        step.report("get_weather_forecast", "success")
    assert conflict.value.details["recorded"]["chosen"] == "get_current_weather"

    stats = settled_stats(admin, namespace, routes=1, feedback=1)
    assert (stats.routes, stats.feedback, stats.hit_at_1, stats.success) == (1, 1, 1, 1)


def test_none_fit_and_an_error_outcome(agent: ToolReach, admin: ToolReach, namespace: str) -> None:
    assert agent.route("play some jazz music", k=1).none_fit().verdict == "none_fit"
    failed = agent.route("track the parcel of order o100234", k=3)
    report = failed.report("track_shipment", "error", "NOT_YET_SHIPPED")
    assert report is not None and report.error_code == "NOT_YET_SHIPPED"
    stats = settled_stats(admin, namespace, routes=2, feedback=2)
    assert (stats.none_fit, stats.success) == (1, 0)


def test_exported_names_map_back(agent: ToolReach, admin: ToolReach, namespace: str) -> None:
    card = {"name": "billing:refund.v2", "description": "Refund an invoice in full or in part."}
    admin.tools.create(card, namespace=namespace)
    step = agent.route("refund the invoice", k=3, format="anthropic")
    exported = next(t["name"] for t in step.tools if t["name"].startswith("billing_refund_v2_"))
    assert step.tool_name(exported) == "billing:refund.v2" and step.offers(exported)
    assert step.validate(exported, {}).valid
    report = step.report(exported, "success")
    assert report is not None and report.chosen == "billing:refund.v2"


def test_tools_crud(admin: ToolReach, namespace: str) -> None:
    card = {
        "name": "get_stock_price",
        "description": "Latest traded price of one stock by ticker.",
        "parameters": {
            "type": "object",
            "properties": {"ticker": {"type": "string", "pattern": "^[A-Z]{1,5}$"}},
            "required": ["ticker"],
        },
    }
    created = admin.tools.create(card, namespace=namespace)
    assert (created.name, created.version, created.namespace) == ("get_stock_price", 1, namespace)
    with pytest.raises(Conflict) as exists:
        admin.tools.create(card, namespace=namespace)
    assert (
        exists.value.code == "conflict"
        and exists.value.details["hint"] == "use PUT to add a version"
    )

    changed = {**card, "description": "Latest price of one stock; for past prices see history."}
    assert admin.tools.put("get_stock_price", changed, namespace=namespace).version == 2
    assert admin.tools.put("get_stock_price", changed, namespace=namespace).version == 2
    assert (
        admin.tools.get("get_stock_price", namespace=namespace, version=1).description
        == (card["description"])
    )
    exported = admin.tools.export("get_stock_price", "openai", namespace=namespace)
    assert exported["function"]["name"] == "get_stock_price"

    page = admin.tools.list(namespace=namespace, text="stock", limit=5)
    assert [t.name for t in page.tools()] == ["get_stock_price"]
    again = admin.tools.bulk(DEMO[:2], namespace=namespace)
    assert again.unchanged == [t["name"] for t in DEMO[:2]]

    admin.tools.delete("get_stock_price", namespace=namespace)
    with pytest.raises(NotFound):
        admin.tools.get("get_stock_price", namespace=namespace)


def test_errors_are_typed_and_carry_the_shape(service: Service, agent: ToolReach) -> None:
    with ToolReach(service.url) as anonymous, pytest.raises(Unauthorized) as refused:
        anonymous.route("weather in Paris")
    assert refused.value.status == 401 and refused.value.code == "unauthorized"

    step = agent.route("weather in Paris")
    with pytest.raises(InvalidInput) as invented:
        step.report("get_weather_now")
    assert "get_current_weather" in str(invented.value.details)

    patient = RetryPolicy(max_retries=1)  # an unknown route is retried once, a second later
    client = ToolReach(service.url, api_key=AGENT_KEY, retry=patient)
    with client, pytest.raises(NotFound) as lost:
        client.feedback("0" * 32, "get_current_weather")
    assert lost.value.code == "not_found"


def test_no_service_is_a_transport_error() -> None:
    client = ToolReach("http://127.0.0.1:9", retry=RetryPolicy(max_retries=1, backoff=0.01))
    with client, pytest.raises(TransportError):
        client.route("weather in Paris")
