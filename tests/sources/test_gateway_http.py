"""An agent routes, then calls through ToolReach: an OpenAPI source served by a local
upstream answers, or the gateway answers with a structured error; every call is a report."""

from __future__ import annotations

import logging
import time

import pytest
from fastapi.testclient import TestClient

from tests.api.loop_support import services_of
from tests.conftest import ADMIN, AGENT
from tests.sources.conftest import app_client
from tests.sources.upstream import Upstream

SECRET = "sk-test-0123456789abcdef"


def register(client: TestClient, upstream: Upstream, **extra: object) -> dict:
    body = {"name": "pets", "kind": "openapi", "url": f"{upstream.url}/openapi.json", **extra}
    response = client.post("/v1/sources", json=body, headers=ADMIN)
    assert response.status_code == 201, response.text
    return response.json()


def call(client: TestClient, name: str, arguments: dict | None = None, **extra: object) -> dict:
    body = {"name": name, "arguments": arguments or {}, **extra}
    response = client.post("/v1/call", json=body, headers=AGENT)
    assert response.status_code == 200, response.text
    return response.json()


def test_route_then_call_and_stats_count_it(gw: TestClient, upstream: Upstream) -> None:
    report = register(gw, upstream)
    assert report["status"] == "synced" and report["tools"] == 10
    route = gw.post("/v1/route", json={"query": "get the pet with id 42"}, headers=AGENT).json()
    assert route["candidates"][0]["name"] == "getPet"
    answer = call(gw, "getPet", {"petId": "42", "verbose": True}, route_id=route["route_id"])
    assert answer["ok"] is True and answer["attempts"] == 1
    assert answer["result"] == {
        "status": 200,
        "body": {"id": "42", "name": "Rex", "query": {"verbose": ["true"]}},
    }
    services_of(gw).events.flush()
    stats = gw.get("/v1/stats", headers=ADMIN).json()
    assert stats["routes"] == 1 and stats["feedback"] == 1 and stats["hit_at_1"] == 1
    assert stats["rates"]["success_after_routing"] == 1.0
    feedback = gw.post(
        "/v1/feedback",
        json={"route_id": route["route_id"], "chosen": "getPet", "outcome": "success"},
        headers=AGENT,
    )
    assert feedback.json()["verdict"] == "hit_at_1"  # the call's report, confirmed


def test_upstream_error_is_structured_with_the_cards_suggestion(
    gw: TestClient, upstream: Upstream
) -> None:
    register(gw, upstream)
    route = gw.post("/v1/route", json={"query": "get pet 404"}, headers=AGENT).json()
    answer = call(gw, "getPet", {"petId": "404"}, route_id=route["route_id"])
    assert answer["ok"] is False
    error = answer["error"]
    assert error["code"] == "404" and error["retryable"] is False
    assert error["suggestion"].startswith("Check the identifiers")
    assert error["details"] == {"status": 404, "body": {"message": "no such pet"}}
    services_of(gw).events.flush()
    stats = gw.get("/v1/stats", headers=ADMIN).json()
    assert stats["feedback"] == 1 and stats["rates"]["success_after_routing"] == 0.0
    assert any(t["name"] == "getPet" and t["chosen"] == 1 for t in stats["tools"])


def test_validation_before_forwarding(gw: TestClient, upstream: Upstream) -> None:
    register(gw, upstream)
    unknown = call(gw, "getPett", {"petId": "1"})
    assert unknown["error"]["code"] == "unknown_tool"
    assert unknown["error"]["details"]["did_you_mean"][0] == "getPet"
    invalid = call(gw, "createPet", {"tag": 3})
    assert invalid["error"]["code"] == "invalid_arguments"
    assert invalid["error"]["details"] and upstream.hits.get("/pets", 0) == 0
    created = call(gw, "createPet", {"name": "Ada", "tag": "cat"})
    assert created["result"] == {"status": 201, "body": {"created": {"name": "Ada", "tag": "cat"}}}
    hand = gw.post(
        "/v1/tools", json={"name": "by_hand", "description": "Written by hand."}, headers=ADMIN
    )
    assert hand.status_code == 201
    assert call(gw, "by_hand")["error"]["code"] == "not_callable"


def test_batch_partial_failure(gw: TestClient, upstream: Upstream) -> None:
    register(gw, upstream)
    calls = [
        {"name": "getPet", "arguments": {"petId": "1"}},
        {"name": "getPet", "arguments": {"petId": "404"}},
        {"name": "nope", "arguments": {}},
        {"name": "slowThing", "arguments": {}},
    ]
    started = time.perf_counter()
    response = gw.post("/v1/call/batch", json={"calls": calls}, headers=AGENT)
    assert response.status_code == 200
    body = response.json()
    assert [r["ok"] for r in body["results"]] == [True, False, False, True]
    assert [r["error"]["code"] for r in body["results"] if r["error"]] == ["404", "unknown_tool"]
    assert body["succeeded"] == 2 and body["failed"] == 2
    assert time.perf_counter() - started < 5.5  # concurrently: the slow call does not add up


def test_hostile_upstream(sqlite_db: str, upstream: Upstream) -> None:
    with app_client(
        sqlite_db, gateway_timeout_seconds=1, gateway_max_response_bytes=1_048_576
    ) as gw:
        register(gw, upstream)
        slow = call(gw, "slowThing")
        assert slow["error"]["code"] == "timeout" and slow["error"]["retryable"] is True
        assert slow["latency_ms"] < 2500
        huge = call(gw, "hugeThing")
        assert huge["error"]["code"] == "response_too_large"
        away = call(gw, "redirectAway")
        assert away["error"]["code"] == "redirect_refused"
        assert "169.254.169.254" in away["error"]["message"]
        home = call(gw, "redirectHome")
        assert home["ok"] and home["result"]["body"]["id"] == "7"


def test_retries_only_safe_calls_and_breaker(sqlite_db: str, upstream: Upstream) -> None:
    with app_client(sqlite_db, gateway_breaker_failures=3) as gw:
        register(gw, upstream)
        upstream.flaky = 0
        flaky = call(gw, "flakyThing")  # GET: retried through two 503s
        assert flaky["ok"] and flaky["attempts"] == 3
        before = upstream.hits.get("/broken-post", 0)
        post = call(gw, "brokenPost")  # POST: not safe to repeat, one attempt
        assert post["error"]["code"] == "500" and post["attempts"] == 1
        assert upstream.hits["/broken-post"] == before + 1
        broken = call(gw, "brokenThing")
        assert broken["error"]["code"] == "500"
        opened = call(gw, "getPet", {"petId": "1"})  # the source's breaker is open now
        assert opened["error"]["code"] == "circuit_open" and opened["error"]["retryable"]


def test_secrets_by_reference(
    sqlite_db: str,
    upstream: Upstream,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("PETS_TOKEN", SECRET)
    caplog.set_level(logging.DEBUG)
    auth = {"headers": {"Authorization": {"env": "PETS_TOKEN", "prefix": "Bearer "}}}
    with app_client(sqlite_db) as gw:
        register(gw, upstream, **auth)
        echoed = call(gw, "whoAmI")  # the upstream got it, the agent sees it masked
        assert echoed["ok"] and echoed["result"]["body"]["authorization"] == "[secret]"
        shown = gw.get("/v1/sources/pets", headers=ADMIN).json()
        assert shown["config"]["headers"]["Authorization"] == {
            "env": "PETS_TOKEN",
            "prefix": "Bearer ",
        }
        engine = services_of(gw).engine
        with engine.connect() as connection:
            dumped = " ".join(
                str(row)
                for table in ("sources", "source_tools", "tool_versions")
                for row in connection.exec_driver_sql(f"SELECT * FROM {table}")
            )
        assert SECRET not in dumped
        monkeypatch.delenv("PETS_TOKEN")
        missing = call(gw, "whoAmI")
        assert missing["error"]["code"] == "credentials_missing"
        assert "PETS_TOKEN" in missing["error"]["message"]
        refused = gw.post(
            "/v1/sources",
            json={
                "name": "x",
                "kind": "openapi",
                "url": f"{upstream.url}/openapi.json",
                "headers": {"A": {"env": "TOOLREACH_ADMIN_KEYS"}},
            },
            headers=ADMIN,
        )
        assert refused.status_code == 422
        outside = gw.post(
            "/v1/sources",
            json={
                "name": "y",
                "kind": "openapi",
                "url": f"{upstream.url}/openapi.json",
                "headers": {"A": {"file": "/etc/passwd"}},
            },
            headers=ADMIN,
        )
        assert outside.status_code == 422 and "TOOLREACH_SECRET_DIRS" in outside.text
    assert SECRET not in caplog.text


def test_outbound_rules_by_default(sqlite_db: str, upstream: Upstream) -> None:
    """The secure default refuses loopback (and link-local, metadata) sources."""
    with app_client(sqlite_db, outbound_allowed_networks=()) as gw:
        body = {"name": "pets", "kind": "openapi", "url": f"{upstream.url}/openapi.json"}
        refused = gw.post("/v1/sources", json=body, headers=ADMIN)
        message = refused.json()["error"]["message"]
        assert refused.status_code == 502 and "TOOLREACH_OUTBOUND_ALLOWED_NETWORKS" in message
        metadata = {"name": "m", "kind": "mcp", "url": "http://169.254.169.254/mcp"}
        refused = gw.post("/v1/sources", json=metadata, headers=ADMIN)
        assert refused.status_code == 502 and "link-local" in refused.json()["error"]["message"]
        assert gw.get("/v1/sources", headers=ADMIN).json()["total"] == 0
    with app_client(sqlite_db) as gw:  # registered while loopback was allowed...
        register(gw, upstream)
    with app_client(sqlite_db, outbound_allowed_networks=()) as gw:  # ...refused when called
        answer = call(gw, "getPet", {"petId": "1"})
        assert answer["error"]["code"] == "outbound_refused"


def test_a_call_through_the_gateway_again_is_refused(gw: TestClient, upstream: Upstream) -> None:
    register(gw, upstream)
    body = {"name": "getPet", "arguments": {"petId": "1"}}
    looped = gw.post("/v1/call", json=body, headers={**AGENT, "X-ToolReach-Hop": "1"}).json()
    assert looped["error"]["code"] == "loop_refused"
