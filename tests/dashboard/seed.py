"""Data for the dashboard tests, written through the real API: tools, routes and feedback.

Each scripted route says what the agent then did relative to the router's answer (used the
first candidate, a lower one, a tool not offered, none), so the expected counts are known
exactly whatever order the router ranks the tools in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from tests.conftest import ADMIN, AGENT

Plan = Literal["first", "lower", "not_offered", "none", "no_feedback"]
XSS_QUERY = "<script>alert('xss')</script> price of AAPL"
XSS_DESCRIPTION = 'Looks up a stock. <img src=x onerror="alert(1)"> Use for quotes only.'


class HttpClient(Protocol):
    def post(self, url: str, **kwargs: Any) -> Any: ...
    def get(self, url: str, **kwargs: Any) -> Any: ...


def _card(name: str, description: str, namespace: str = "default", **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "description": description, **extra}


TOOLS = [
    _card(
        "get_current_weather",
        "Current weather for a city: temperature, wind, humidity. Not for forecasts.",
        parameters={
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "城市名 or city name"},
                "unit": {"type": "string", "enum": ["c", "f"]},
            },
            "required": ["city"],
        },
        errors=[{"code": "CITY_NOT_FOUND", "meaning": "unknown city", "suggestion": "ask"}],
        tags=["weather"],
    ),
    _card(
        "get_weather_forecast", "Weather forecast for the next days in a city.", tags=["weather"]
    ),
    _card("get_stock_price", XSS_DESCRIPTION, tags=["finance"]),
    _card("get_stock_history", "Past daily prices of a stock by ticker.", tags=["finance"]),
    _card("send_email", "Send an email now to one or more recipients."),
    _card("translate_text", "把文本翻译成另一种语言。Translate text into another language."),
    _card("query_express_tracking", "按快递单号查询物流轨迹和签收状态。Track a parcel."),
    _card("search_tickets", "Search support tickets by words.", namespace="team-b"),
    _card("create_ticket", "Open a new support ticket.", namespace="team-b"),
    _card("close_ticket", "Close a support ticket that is solved.", namespace="team-b"),
]

SCRIPT: list[tuple[str, str, Plan, str]] = [
    ("default", "weather right now in Oslo", "first", "success"),
    ("default", "will it rain tomorrow in Paris", "lower", "success"),
    ("default", "把这段话翻译成英文", "first", "success"),
    ("default", XSS_QUERY, "not_offered", "error"),
    ("default", "查询快递 SF1234567 到哪里了", "not_offered", "success"),
    ("default", "book a flight to Rome", "none", "unknown"),
    ("default", "email the report to alice", "first", "unknown"),
    ("default", "stock price history of MSFT", "no_feedback", "success"),
    ("team-b", "find the ticket about login errors", "first", "success"),
    ("team-b", "open a ticket for the broken printer", "not_offered", "success"),
    ("team-b", "close ticket 42", "lower", "error"),
]


@dataclass
class Seeded:
    """What was written, and the counts the statistics must show."""

    route_ids: list[str] = field(default_factory=list)
    misroutes: list[dict[str, Any]] = field(default_factory=list)
    expected: dict[str, int] = field(default_factory=dict)


def _names(namespace: str) -> list[str]:
    return [t["name"] for t in TOOLS if t["namespace"] == namespace]


def _choice(plan: Plan, candidates: list[str], namespace: str) -> str | None:
    if plan == "first":
        return candidates[0]
    if plan == "lower":
        return candidates[1]
    if plan == "not_offered":
        return next(n for n in _names(namespace) if n not in candidates)
    return None


def seed(client: HttpClient, flush: Callable[[], object]) -> Seeded:
    """Write the tools, route every scripted step, report feedback; then flush the writer."""
    response = client.post("/v1/tools/bulk", json={"tools": TOOLS}, headers=ADMIN)
    assert response.status_code == 200, response.text
    seeded = Seeded(
        expected=dict.fromkeys(
            ("routes", "feedback", "hit_at_1", "hit_at_k", "miss", "none_fit", "success"), 0
        )
    )
    for namespace, query, plan, outcome in SCRIPT:
        routed = client.post(
            "/v1/route", json={"query": query, "namespace": namespace, "k": 2}, headers=AGENT
        )
        assert routed.status_code == 200, routed.text
        body = routed.json()
        candidates = [c["name"] for c in body["candidates"]]
        assert len(candidates) == 2, body
        seeded.route_ids.append(body["route_id"])
        seeded.expected["routes"] += 1
        if plan == "no_feedback":
            continue
        chosen = _choice(plan, candidates, namespace)
        report = {"route_id": body["route_id"], "chosen": chosen, "outcome": outcome}
        if outcome == "error":
            report["error_code"] = "UPSTREAM_DOWN"
        sent = client.post("/v1/feedback", json=report, headers=AGENT)
        assert sent.status_code == 200, sent.text
        _count(seeded.expected, plan, outcome)
        if plan == "not_offered":
            seeded.misroutes.append(
                {
                    "route_id": body["route_id"],
                    "query": query,
                    "namespace": namespace,
                    "candidates": candidates,
                    "chosen": chosen,
                }
            )
    flush()
    return seeded


def _count(expected: dict[str, int], plan: Plan, outcome: str) -> None:
    expected["feedback"] += 1
    expected["hit_at_1"] += plan == "first"
    expected["hit_at_k"] += plan in ("first", "lower")
    expected["miss"] += plan == "not_offered"
    expected["none_fit"] += plan == "none"
    expected["success"] += outcome == "success"
