"""While Postgres refuses connections: 503 ``unavailable`` (not 500) where the database is
needed, answers as usual where it is not (routes, validation), nothing lost, and recovery
once it is back. The outage is real: the database stops allowing connections and the
service's open ones are terminated."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from httpx import Response
from sqlalchemy import func, select

from app import migrate
from app.db import make_engine
from app.loop.models import RouteEvent
from app.main import create_app
from app.services import make_encoder
from tests.api.loop_support import services_of
from tests.api.test_tools import weather_card
from tests.conftest import ADMIN, AGENT, PG_ADMIN_URL, _pg_execute, make_settings


@pytest.fixture
def outage_db() -> Iterator[str]:
    name = f"toolreach_outage_{uuid.uuid4().hex[:8]}"
    _pg_execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        _pg_execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        _pg_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def set_down(name: str, down: bool) -> None:
    _pg_execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(not down).lower()}')
    if down:
        _pg_execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE datname = '{name}' AND pid <> pg_backend_pid()"
        )


def answer_within(client: TestClient, path: str, status: int, *, seconds: float) -> Response:
    """The first answer with ``status``, asking every 0.1 s for at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while (answer := client.get(path)).status_code != status and time.monotonic() < deadline:
        time.sleep(0.1)
    assert answer.status_code == status, answer.text
    return answer


def test_a_database_outage_is_503_where_it_matters_and_nothing_is_lost(outage_db: str) -> None:
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{outage_db}"
    migrate.upgrade(url)
    app = create_app(make_settings(url), encoder=make_encoder("fake"))
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.post("/v1/tools", json=weather_card(), headers=ADMIN).status_code == 201
        first = client.post("/v1/route", json={"query": "weather in Paris"}, headers=AGENT)
        route_id = first.json()["route_id"]
        services_of(client).events.flush()

        set_down(outage_db, True)
        for method, path, body in [
            ("GET", "/v1/tools", None),
            ("GET", "/v1/tools/get_weather?version=1", None),
            ("PUT", "/v1/tools/get_weather", weather_card(description="Changed. Still weather.")),
            ("POST", "/v1/feedback", {"route_id": route_id, "chosen": "get_weather"}),
        ]:
            answer = client.request(method, path, json=body, headers=ADMIN)
            assert answer.status_code == 503, (path, answer.text)
            assert answer.json()["error"]["code"] == "unavailable"
            assert answer.headers["Retry-After"] == "5"
        # Readiness serves the state the database probe keeps, updated every second.
        not_ready = answer_within(client, "/readyz", 503, seconds=5)
        assert not_ready.headers["Retry-After"] == "5"
        assert not_ready.json()["error"]["details"] is None  # no key: nothing more
        during = [
            client.post("/v1/route", json={"query": f"weather in city {i}"}, headers=AGENT)
            for i in range(3)
        ]
        assert [r.status_code for r in during] == [200, 200, 200]
        validated = client.post(
            "/v1/validate",
            json={"name": "get_weather", "arguments": {"city": "Paris"}, "route_id": route_id},
            headers=AGENT,
        )
        assert validated.status_code == 200 and validated.json()["valid"] is True

        set_down(outage_db, False)
        assert client.get("/v1/tools", headers=AGENT).json()["total"] == 1
        assert answer_within(client, "/readyz", 200, seconds=5).json() == {"status": "ready"}
        services_of(client).events.flush()
    engine = make_engine(url)
    with engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(RouteEvent)) == 4
    engine.dispose()
