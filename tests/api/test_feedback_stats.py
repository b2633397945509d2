"""Feedback and hit-rate statistics, from a scripted sequence of routes and reports."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.loop_support import TOOLS, VIEWER, services_of
from tests.api.test_tools import weather_card
from tests.conftest import ADMIN, AGENT


def route(client: TestClient, query: str, namespace: str = "default") -> tuple[str, list[str]]:
    body = {"query": query, "k": 2, "namespace": namespace}
    response = client.post("/v1/route", json=body, headers=AGENT)
    assert response.status_code == 200, response.text
    answer = response.json()
    return answer["route_id"], [c["name"] for c in answer["candidates"]]


def report(client: TestClient, route_id: str, chosen: str | None, **extra: Any) -> Any:
    return client.post(
        "/v1/feedback", json={"route_id": route_id, "chosen": chosen, **extra}, headers=AGENT
    )


def stats(client: TestClient, **params: str) -> dict[str, Any]:
    services_of(client).events.flush()
    response = client.get("/v1/stats", params=params, headers=VIEWER)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def not_offered(candidates: list[str]) -> str:
    return next(t["name"] for t in TOOLS if t["name"] not in candidates)


def test_scripted_routes_and_feedback(loop: TestClient) -> None:
    r1, c1 = route(loop, "what is the weather in Paris now")
    r2, c2 = route(loop, "weather forecast for Oslo")
    r3, c3 = route(loop, "send an email to Ann")
    r4, c4 = route(loop, "convert 10 euros to dollars")
    r5, c5 = route(loop, "order a pizza")
    r6, _ = route(loop, "weather in Rome")  # never reported
    services_of(loop).events.flush()  # from here on the events are in the database
    r7, c7 = route(loop, "is it raining in Bergen")
    r8, c8 = route(loop, "ping the service", namespace="other")
    missed = not_offered(c4)
    assert len(c3) == 2

    # hit@1 (success), hit@1 (error), hit@k, miss, none-fit
    first = report(loop, r1, c1[0], outcome="success")
    assert first.status_code == 200, first.text
    assert first.json()["verdict"] == "hit_at_1" and first.json()["rank"] == 1
    assert report(loop, r2, c2[0], outcome="error", error_code="CITY_NOT_FOUND").status_code == 200
    third = report(loop, r3, c3[1], outcome="success")
    assert third.json()["verdict"] == "hit_at_k" and third.json()["rank"] == 2
    fourth = report(loop, r4, missed, outcome="success")
    assert fourth.json()["verdict"] == "miss" and fourth.json()["rank"] is None
    assert report(loop, r5, None).json()["verdict"] == "none_fit"
    assert report(loop, r8, c8[0], outcome="success").json()["verdict"] == "hit_at_1"

    # validate with the route id records the choice; a later report fills in the outcome
    validated = loop.post(
        "/v1/validate",
        json={"name": c7[0], "arguments": {"city": "Bergen"}, "route_id": r7},
        headers=AGENT,
    )
    assert validated.status_code == 200, validated.text
    assert validated.json()["valid"] is True
    services_of(loop).events.flush()  # the call is recorded off the request path
    completed = report(loop, r7, c7[0], outcome="success")
    assert completed.status_code == 200, completed.text
    assert completed.json()["from_validate"] is True
    assert completed.json()["outcome"] == "success"

    # repeats: identical → same answer; contradicting → 409 with the recorded one
    again = report(loop, r1, c1[0], outcome="success")
    assert again.status_code == 200 and again.json() == first.json()
    assert report(loop, r5, None).status_code == 200
    assert report(loop, r1, c1[0]).json() == first.json()  # "unknown" adds nothing
    other_tool = report(loop, r1, not_offered(c1[:1]), outcome="success")
    assert other_tool.status_code == 409, other_tool.text
    assert other_tool.json()["error"]["details"]["recorded"]["chosen"] == c1[0]
    assert report(loop, r2, c2[0], outcome="success").status_code == 409
    assert report(loop, r2, c2[0], outcome="error", error_code="OTHER").status_code == 409

    # unknown route, invented tool, bad combinations
    unknown = report(loop, "0" * 32, c1[0], outcome="success")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    invented = report(loop, r6, "get_wether", outcome="success")
    assert invented.status_code == 422
    assert invented.json()["error"]["details"][0]["did_you_mean"][0] == "get_weather"
    assert report(loop, r6, c1[0], outcome="success", error_code="X").status_code == 422
    assert report(loop, r6, c1[0], outcome="maybe").status_code == 422
    assert report(loop, r8, "get_weather", outcome="success").status_code == 422
    assert report(loop, r6, "ping").status_code == 422  # a tool of another namespace

    body = stats(loop, namespace="default")
    counts = {k: body[k] for k in ("routes", "feedback", "hit_at_1", "hit_at_k", "miss")}
    assert counts == {"routes": 7, "feedback": 6, "hit_at_1": 3, "hit_at_k": 4, "miss": 1}
    assert (body["none_fit"], body["success"], body["dropped_events"]) == (1, 4, 0)
    assert body["rates"] == {
        "hit_at_1": 0.5,
        "hit_at_k": round(4 / 6, 6),
        "miss": round(1 / 6, 6),
        "none_fit": round(1 / 6, 6),
        "success_after_routing": round(4 / 6, 6),
    }
    assert len(body["buckets"]) in (1, 2)  # one day (two if the test ran across midnight)
    assert sum(b["routes"] for b in body["buckets"]) == 7
    assert sum(b["hit_at_k"] for b in body["buckets"]) == 4
    assert body["latency_ms"]["p50"] is not None
    assert body["latency_ms"]["p50"] <= body["latency_ms"]["p95"] <= body["latency_ms"]["p99"]

    [misroute] = body["misroutes"]
    assert misroute["route_id"] == r4 and misroute["chosen"] == missed
    assert misroute["query"] == "convert 10 euros to dollars" and misroute["candidates"] == c4

    # per tool and confusions, against a plain count of what was offered and reported
    routes = {r1: c1, r2: c2, r3: c3, r4: c4, r5: c5, r6: route_candidates(loop, r6), r7: c7}
    chosen = {r1: c1[0], r2: c2[0], r3: c3[1], r4: missed, r5: None, r7: c7[0]}
    assert body["tools"] == expected_tools(routes, chosen, successes={r1, r3, r4, r7})
    confusions = Counter(
        (c[0], chosen[r]) for r, c in routes.items() if chosen.get(r) not in (None, c[0])
    )
    assert {(c["offered_first"], c["chosen"]): c["count"] for c in body["confusions"]} == confusions
    assert [c["count"] for c in body["confusions"]] == sorted(confusions.values(), reverse=True)

    everything = stats(loop)
    assert (everything["routes"], everything["feedback"], everything["hit_at_1"]) == (8, 7, 4)
    only_other = stats(loop, namespace="other")
    assert (only_other["routes"], only_other["hit_at_1"], only_other["miss"]) == (1, 1, 0)
    assert only_other["tools"][0]["name"] == "ping" and only_other["tools"][0]["success"] == 1

    by_tool = stats(loop, tool=missed)  # routes where it was offered or chosen
    assert by_tool["routes"] == sum(
        missed in c or chosen.get(r) == missed for r, c in routes.items()
    )
    assert by_tool["miss"] == 1


def route_candidates(client: TestClient, route_id: str) -> list[str]:
    from app.loop.repository import find_route

    with services_of(client).session_factory() as session:
        facts = find_route(session, route_id)
    assert facts is not None
    return list(facts.candidates)


def expected_tools(
    routes: dict[str, list[str]], chosen: dict[str, str | None], successes: set[str]
) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}

    def row(name: str) -> dict[str, Any]:
        zero = dict.fromkeys(
            ("offered", "offered_first", "chosen", "chosen_when_not_offered", "passed_over"), 0
        )
        return rows.setdefault(name, {"namespace": "default", "name": name, **zero, "success": 0})

    for route_id, candidates in routes.items():
        for rank, name in enumerate(candidates):
            row(name)["offered"] += 1
            row(name)["offered_first"] += rank == 0
            row(name)["passed_over"] += route_id in chosen and chosen[route_id] != name
    for route_id, name in chosen.items():
        if name is not None:
            row(name)["chosen"] += 1
            row(name)["chosen_when_not_offered"] += name not in routes[route_id]
            row(name)["success"] += route_id in successes
    return sorted(rows.values(), key=lambda t: (-t["offered"], -t["chosen"], t["name"]))


def test_feedback_needs_agent_rights_and_a_body(loop: TestClient) -> None:
    route_id, candidates = route(loop, "weather in Paris")
    body = {"route_id": route_id, "chosen": candidates[0]}
    assert loop.post("/v1/feedback", json=body).status_code == 401
    assert loop.post("/v1/feedback", json=body, headers=VIEWER).status_code == 403
    assert loop.post("/v1/feedback", json={"route_id": route_id}, headers=AGENT).status_code == 422
    assert loop.post("/v1/feedback", json=body, headers=ADMIN).status_code == 200


def test_validate_with_route_id_ignores_what_it_cannot_record(loop: TestClient) -> None:
    route_id, candidates = route(loop, "weather in Paris")
    for name, rid in (("no_such_tool", route_id), (candidates[0], "f" * 32)):
        body = {"name": name, "arguments": {}, "route_id": rid}
        assert loop.post("/v1/validate", json=body, headers=AGENT).status_code == 200
    assert stats(loop)["feedback"] == 0
    reported = report(loop, route_id, candidates[-1], outcome="error")
    assert reported.status_code == 200
    body = {"name": candidates[0], "arguments": {}, "route_id": route_id}
    assert loop.post("/v1/validate", json=body, headers=AGENT).status_code == 200
    services_of(loop).events.flush()
    assert report(loop, route_id, candidates[-1], outcome="error").json() == reported.json()


def test_validate_refuses_an_empty_route_id_as_feedback_does(loop: TestClient) -> None:
    body = {"name": "get_weather", "arguments": {}, "route_id": ""}
    answer = loop.post("/v1/validate", json=body, headers=AGENT)  # was a 500
    assert answer.status_code == 422
    assert answer.json()["error"]["code"] == "invalid_input"
    assert answer.json()["error"]["details"][0]["loc"] == ["body", "route_id"]


@pytest.mark.parametrize("path", ["/v1/stats", "/v1/lookalikes", "/v1/stats?bucket=hour"])
def test_stats_urls_refuse_no_key_and_agent_keys(loop: TestClient, path: str) -> None:
    assert loop.get(path).status_code == 401
    assert loop.get(path).json()["error"]["code"] == "unauthorized"
    assert loop.get(path, headers=AGENT).status_code == 403
    assert (
        loop.get(path, headers={"Authorization": "Bearer not-a-real-key-at-all"}).status_code == 401
    )
    assert loop.get(path, headers=VIEWER).status_code == 200
    assert loop.get(path, headers=ADMIN).status_code == 200


def test_dashboard_keys_are_read_only(loop: TestClient) -> None:
    assert loop.post("/v1/route", json={"query": "x"}, headers=VIEWER).status_code == 403
    assert loop.post("/v1/tools", json=weather_card(name="x"), headers=VIEWER).status_code == 403
    assert loop.get("/v1/tools", headers=VIEWER).status_code == 403


def test_stats_filters_are_checked(loop: TestClient) -> None:
    bad = {"since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"}
    assert loop.get("/v1/stats", params=bad, headers=VIEWER).status_code == 422
    assert loop.get("/v1/stats?bucket=week", headers=VIEWER).status_code == 422
    assert loop.get("/v1/stats?since=yesterday", headers=VIEWER).status_code == 422
    unknown = loop.get("/v1/stats?namespace=nobody", headers=VIEWER)
    assert unknown.status_code == 404 and "no tools in namespace 'nobody'" in unknown.text
    empty = stats(loop, tool="no_such_tool")
    assert empty["routes"] == 0 and empty["rates"]["hit_at_1"] is None
    assert empty["latency_ms"] == {"p50": None, "p95": None, "p99": None}


@pytest.mark.parametrize(
    ("second", "status"),
    [({"outcome": "success"}, 200), ({"outcome": "error", "error_code": "E"}, 409)],
)
def test_a_report_sent_twice_at_once_is_one_report(
    loop: TestClient, monkeypatch: pytest.MonkeyPatch, second: dict[str, str], status: int
) -> None:
    """The copy that loses the insert race is reconciled with the one that landed (it was a
    409 'retry'): the same report is a 200, a contradicting one the usual 409."""
    from app.db import unit_of_work
    from app.loop import repository as event_repository
    from app.loop.feedback import record_feedback

    route_id, candidates = route(loop, "weather in Paris")
    services = services_of(loop)
    services.events.flush()
    first = {"route_id": route_id, "chosen": candidates[0], "outcome": "success"}
    real_get = event_repository.get_feedback

    def other_copy_lands_first(session, rid):  # type: ignore[no-untyped-def]
        monkeypatch.setattr(event_repository, "get_feedback", real_get)
        from app.schemas import FeedbackRequest

        with unit_of_work(services.session_factory) as other:
            record_feedback(other, services.events, services.index, FeedbackRequest(**first))
        return None  # what this request saw before the other one committed

    monkeypatch.setattr(event_repository, "get_feedback", other_copy_lands_first)
    answer = report(loop, route_id, candidates[0], **second)
    assert answer.status_code == status, answer.text
    assert stats(loop)["feedback"] == 1


def test_a_report_whose_transaction_fails_leaves_nothing(loop: TestClient) -> None:
    """unit_of_work is the one place that commits: recording a report inside a transaction
    that then fails leaves no row (a savepoint's release had committed it on SQLite)."""
    from app.db import unit_of_work
    from app.loop import repository as event_repository
    from app.loop.feedback import record_feedback
    from app.schemas import FeedbackRequest

    route_id, candidates = route(loop, "weather in Paris")
    services = services_of(loop)
    services.events.flush()
    request = FeedbackRequest(route_id=route_id, chosen=candidates[0], outcome="success")
    with pytest.raises(RuntimeError), unit_of_work(services.session_factory) as session:
        record_feedback(session, services.events, services.index, request)
        raise RuntimeError("the request failed after recording")
    with unit_of_work(services.session_factory) as session:
        assert event_repository.get_feedback(session, route_id) is None


def test_a_tool_the_route_offered_is_accepted_before_this_replica_sees_it(
    loop: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another replica answered the route with a tool this one's index has not polled yet
    (up to TOOLREACH_INDEX_POLL_SECONDS): the report was a 422 'no tool'."""
    route_id, candidates = route(loop, "weather in Paris")
    services = services_of(loop)
    monkeypatch.setattr(services.index, "card", lambda namespace, name: None)  # lagging
    answer = report(loop, route_id, candidates[0], outcome="success")
    assert answer.status_code == 200, answer.text
    assert answer.json()["verdict"] == "hit_at_1"
    assert report(loop, route_id, "invented_tool").status_code in (409, 422)
