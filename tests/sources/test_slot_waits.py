"""A wait for one of a source's slots is never the source's failure (issue 38 item 6).

The probe: sixteen concurrent calls to an operation that answers in 16 s, eight slots, a
30 s timeout. The second eight waited 16 s for a slot, then ran out of the call's 30 s
while the source was still within its own time; each was counted against the source, and
the breaker opened for every other key for 30 s. Here, scaled down: two slots, an operation
that answers in 2 s, a 3.5 s timeout, four calls at once. Two tenants and several keys on
Postgres, each tenant with its own source on the same upstream.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.api.loop_support import services_of
from tests.conftest import ADMIN, empty_database
from tests.sources.conftest import app_client
from tests.sources.echo_upstream import BASE, EchoUpstream

KEYS = {
    "a1": "team-a-agent-one-0123456789",
    "a2": "team-a-agent-two-0123456789",
    "b1": "team-b-agent-one-0123456789",
}
TEAM = {"a1": "team-a", "a2": "team-a", "b1": "team-b"}


def bearer(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[who]}"}


@pytest.fixture
def gw(postgres_url: str, echo: EchoUpstream) -> Iterator[TestClient]:
    empty_database(postgres_url)
    keys = tuple(f"{key}@{TEAM[who]}" for who, key in KEYS.items())
    with app_client(
        postgres_url,
        agent_keys=keys,
        gateway_source_concurrency=2,
        gateway_timeout_seconds=3.5,
        gateway_breaker_failures=2,
        gateway_attempts=1,
    ) as client:
        for team in ("team-a", "team-b"):
            body = {
                "name": f"echo-{team}",
                "namespace": team,
                "kind": "openapi",
                "url": f"{echo.url}{BASE}/openapi.json",
            }
            response = client.post("/v1/sources", json=body, headers=ADMIN)
            assert response.status_code == 201, response.text
        yield client


def test_calls_that_waited_for_a_slot_do_not_open_the_breaker(gw: TestClient) -> None:
    calls = [{"name": "answer_after", "arguments": {"seconds": "2", "q": str(n)}} for n in range(4)]
    batch = gw.post("/v1/call/batch", json={"calls": calls}, headers=bearer("a1"))
    assert batch.status_code == 200, batch.text
    results = batch.json()["results"]
    shown = [(r["error"], r["latency_ms"]) for r in results]
    assert sum(r["ok"] for r in results) == 2, shown  # the two that had a slot at once
    late = [r["error"] for r in results if not r["ok"]]
    assert [e["code"] for e in late] == ["timeout", "timeout"], late
    assert all(e["retryable"] and "waiting for a slot" in e["message"] for e in late), late
    breaker = services_of(gw).gateway._limits.of("echo-team-a").breaker  # type: ignore[union-attr]
    assert breaker.closed and breaker.consecutive == 0
    for who in ("a2", "a1", "b1"):  # another key of the tenant, the same key, the other tenant
        body = {"name": "echo_get", "arguments": {}}
        answer = gw.post("/v1/call", json=body, headers=bearer(who)).json()
        assert answer["ok"], (who, answer)


def test_the_sources_own_timeout_still_counts(gw: TestClient) -> None:
    """A call that had a slot at once and the whole timeout to itself: counted, as before."""
    for _ in range(2):
        body = {"name": "answer_after", "arguments": {"seconds": "4"}}
        answer = gw.post("/v1/call", json=body, headers=bearer("a1")).json()
        assert answer["error"]["code"] == "timeout" and "slot" not in answer["error"]["message"]
    body = {"name": "echo_get", "arguments": {}}
    answer = gw.post("/v1/call", json=body, headers=bearer("a2")).json()
    assert answer["error"]["code"] == "circuit_open", answer
