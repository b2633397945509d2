"""Two replicas on one Postgres agree at once (issue 21): a write on one is routed on the other
without waiting for a poll (LISTEN/NOTIFY; the poll is set to an hour here), also after the
listener's connection was cut; feedback for a route the other replica answered a moment ago
is accepted at once."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest
from fastapi.testclient import TestClient

from app.embedding.encoders import make_encoder
from app.main import create_app
from app.services import Services
from tests.conftest import ADMIN, AGENT, PG_ADMIN_URL, empty_database, make_settings
from tests.waiting import until


def services_of(client: TestClient) -> Services:
    services: Services = client.app.state.services  # type: ignore[attr-defined]
    return services


FLUSH_SECONDS = 30.0


@pytest.fixture
def replicas(postgres_url: str) -> Iterator[tuple[TestClient, TestClient]]:
    empty_database(postgres_url)
    # Route events are flushed every 30 s here, so that "asked A" and "waited for A's next
    # flush" are told apart by a bound no loaded machine reaches (a flush a second after the
    # route could land within any bound under 1 s).
    settings = make_settings(postgres_url, event_flush_seconds=FLUSH_SECONDS)
    apps = [create_app(settings, encoder=make_encoder("fake")) for _ in "ab"]
    with TestClient(apps[0]) as a, TestClient(apps[1]) as b:
        for client in (a, b):
            listener = services_of(client).listener
            assert listener is not None and listener.connected.wait(10)
        yield a, b


def routed(client: TestClient, query: str) -> list[str]:
    response = client.post("/v1/route", json={"query": query, "k": 5}, headers=AGENT)
    if response.status_code == 404:  # this replica has not seen a tool of the namespace yet
        return []
    assert response.status_code == 200, response.text
    return [c["name"] for c in response.json()["candidates"]]


def tool(name: str) -> dict[str, str]:
    return {"name": name, "description": f"Tide tables for harbours ({name})."}


def test_a_write_and_a_delete_on_one_replica_are_routed_on_the_other_at_once(
    replicas: tuple[TestClient, TestClient],
) -> None:
    a, b = replicas
    assert a.post("/v1/tools", json=tool("tides_a"), headers=ADMIN).status_code == 201
    assert until(lambda: "tides_a" in routed(b, "tide tables")) < 5  # the poll: an hour
    assert a.delete("/v1/tools/tides_a", headers=ADMIN).status_code == 204
    until(lambda: "tides_a" not in routed(b, "tide tables"))
    assert services_of(b).index.revision == services_of(a).index.revision


def test_the_listener_reconnects_after_its_connection_is_cut(
    replicas: tuple[TestClient, TestClient], postgres_url: str
) -> None:
    a, b = replicas
    listener = services_of(b).listener
    assert listener is not None
    database = postgres_url.rsplit("/", 1)[1]
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = 'toolreach-listener' AND datname = %s",
            (database,),
        )
    until(lambda: listener.connects >= 2)
    assert a.post("/v1/tools", json=tool("tides_b"), headers=ADMIN).status_code == 201
    assert until(lambda: "tides_b" in routed(b, "tide tables")) < 5


def test_feedback_on_another_replica_right_after_the_route_is_accepted(
    replicas: tuple[TestClient, TestClient],
) -> None:
    a, b = replicas
    assert a.post("/v1/tools", json=tool("tides_c"), headers=ADMIN).status_code == 201
    for _ in range(5):
        answer = a.post("/v1/route", json={"query": "tide tables", "k": 3}, headers=AGENT).json()
        assert services_of(a).events.pending(answer["route_id"]) is not None  # not written yet
        started = time.perf_counter()
        report = {"route_id": answer["route_id"], "chosen": "tides_c", "outcome": "success"}
        response = b.post("/v1/feedback", json=report, headers=AGENT)
        assert response.status_code == 200, response.text
        assert response.json()["rank"] == 1
        assert time.perf_counter() - started < FLUSH_SECONDS / 3  # asked, not waited for A's flush
    made_up = {"route_id": "f" * 32, "chosen": "tides_c"}
    started = time.perf_counter()
    assert b.post("/v1/feedback", json=made_up, headers=AGENT).status_code == 404
    assert time.perf_counter() - started < 0.5  # an id not made a moment ago: no wait
