"""Query memory through the service: what is remembered, that it moves no route by itself
(it is a feature of the learned reranker: docs/ROUTING.md), and forgotten.

Real Postgres and the real HTTP surface (TestClient); the fake encoder."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.loop.memory import MemoryCache
from tests.api.loop_support import services_of
from tests.api.test_tools import weather_card
from tests.conftest import ADMIN, AGENT


def route(client: TestClient, query: str, namespace: str = "default") -> dict:  # type: ignore[type-arg]
    body = {"query": query, "k": 4, "namespace": namespace}
    response = client.post("/v1/route", json=body, headers=AGENT)
    assert response.status_code == 200, response.text
    answer: dict = response.json()  # type: ignore[type-arg]
    return answer


def report(client: TestClient, route_id: str, chosen: str, outcome: str) -> None:
    body = {"route_id": route_id, "chosen": chosen, "outcome": outcome}
    response = client.post("/v1/feedback", json=body, headers=AGENT)
    assert response.status_code == 200, response.text


def memory(client: TestClient) -> MemoryCache:
    services = services_of(client)
    services.events.flush()
    assert services.memory is not None
    services.memory.refresh()
    return services.memory


def test_successes_are_remembered_errors_are_not_and_a_forget_holds(loop: TestClient) -> None:
    before = route(loop, "mail the weekly numbers to Ann")
    assert all("memory" not in c["stages"] for c in before["candidates"])  # none yet
    report(loop, before["route_id"], "send_email", "success")
    failed = route(loop, "convert 10 euros to dollars")
    report(loop, failed["route_id"], "convert_currency", "error")
    remembered = memory(loop)
    steps = remembered.steps("default")
    assert [(s.tool, s.text) for s in steps] == [("send_email", "mail the weekly numbers to Ann")]
    assert remembered.get("other") is None  # a namespace without reports has no memory

    again = route(loop, "mail the weekly numbers to Ann")  # no model serves: the cold route
    assert all("memory" not in c["stages"] for c in again["candidates"])
    assert [c["name"] for c in again["candidates"]] == [c["name"] for c in before["candidates"]]
    other = route(loop, "ping the service", namespace="other")
    assert all("memory" not in c["stages"] for c in other["candidates"])

    forgotten = loop.delete(
        "/v1/memory/send_email", params={"route_id": before["route_id"]}, headers=ADMIN
    )
    assert forgotten.status_code == 204, forgotten.text
    assert memory(loop).get("default") is None
    unknown = loop.delete("/v1/memory/send_email", params={"route_id": "nope"}, headers=ADMIN)
    assert unknown.status_code == 404 and set(unknown.json()["error"]) == {
        "code",
        "message",
        "details",
    }
    # The mark is in the database: a new process's memory (a restart, a replica) forgets too.
    services = services_of(loop)
    fresh = MemoryCache(services.session_factory, services.encoder, 14.0, services.index.has_tool)
    fresh.refresh()
    assert fresh.get("default") is None


def test_forgetting_a_whole_tool(loop: TestClient) -> None:
    for query in ("mail the report to Bob", "email Carol the minutes"):
        answer = route(loop, query)
        report(loop, answer["route_id"], "send_email", "success")
    assert len(memory(loop).steps("default")) == 2
    assert loop.delete("/v1/memory/send_email", headers=ADMIN).status_code == 204
    assert memory(loop).steps("default") == ()
    later = route(loop, "mail the report to Bob")  # reported after the forget: remembered
    report(loop, later["route_id"], "send_email", "success")
    assert [s.text for s in memory(loop).steps("default")] == ["mail the report to Bob"]


def put_send_email(client: TestClient, **overrides: object) -> None:
    body = weather_card(name="send_email", description="Send an email to one address.")
    body.update(overrides)
    response = client.put("/v1/tools/send_email", json=body, headers=ADMIN)
    assert response.status_code == 200, response.text


def test_a_reworded_card_keeps_its_memory_a_changed_call_forgets_what_came_before(
    loop: TestClient,
) -> None:
    first = route(loop, "mail the weekly numbers to Ann")
    report(loop, first["route_id"], "send_email", "success")
    put_send_email(loop, description="Send one email message to a single address.")
    remembered = memory(loop).steps("default")
    assert [s.text for s in remembered] == ["mail the weekly numbers to Ann"]  # reworded: kept

    to_and_subject = {
        "type": "object",
        "properties": {"to": {"type": "string"}, "subject": {"type": "string"}},
        "required": ["to", "subject"],
    }
    put_send_email(loop, parameters=to_and_subject)
    assert memory(loop).get("default") is None  # a new call: what fitted the old one is gone
    later = route(loop, "email Bob the subject line")
    report(loop, later["route_id"], "send_email", "success")
    assert [s.text for s in memory(loop).steps("default")] == ["email Bob the subject line"]

    put_send_email(loop, parameters=to_and_subject, description="Email one person.")
    assert [s.text for s in memory(loop).steps("default")] == ["email Bob the subject line"]
