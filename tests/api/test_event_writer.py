"""The background event writer with the database down: buffer, retry, drop the oldest."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import cast

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from app import migrate
from app.db import make_engine, make_session_factory
from app.embedding.encoders import make_encoder
from app.loop.events import EventWriter, RouteEventCandidateRecord, RouteEventRecord, stored_query
from app.loop.models import RouteEvent, RouteEventCandidate
from app.main import create_app
from tests.api.test_tools import weather_card
from tests.conftest import (
    ADMIN,
    AGENT,
    PG_ADMIN_URL,
    _pg_execute,
    empty_database,
    make_settings,
)


def record(n: int, **overrides: object) -> RouteEventRecord:
    values: dict[str, object] = {
        "route_id": f"route-{n:04d}",
        "created_at": datetime(2026, 11, 1, 12, 0, n % 60, tzinfo=UTC),
        "namespace": "default",
        "query": f"step {n}",
        "k": 2,
        "latency_ms": float(n),
        "model": "fake-hash-256",
        "candidates": (
            RouteEventCandidateRecord("get_weather", 1.5, {"keyword": 1.0, "embedding": 0.5}),
            RouteEventCandidateRecord("send_email", 0.5, {"keyword": 0.5}),
        ),
        "weights": {"keyword_weight": 0.5},
        **overrides,
    }
    return RouteEventRecord(**values)  # type: ignore[arg-type]


class FlakyFactory:
    """A session factory that refuses to connect while `down`, and counts every attempt."""

    def __init__(self, real: sessionmaker[Session]) -> None:
        self.real = real
        self.down = True
        self.attempts = 0
        self.attempted = threading.Condition()

    def __call__(self) -> Session:
        with self.attempted:
            self.attempts += 1
            self.attempted.notify_all()
        if self.down:
            raise OperationalError("connect", {}, ConnectionRefusedError("database is down"))
        return self.real()

    def wait_for_attempt_after(self, seen: int) -> None:
        with self.attempted:
            assert self.attempted.wait_for(lambda: self.attempts > seen, timeout=30)


@pytest.fixture
def factory(database_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(database_url)
    yield make_session_factory(engine)
    engine.dispose()


def stored_ids(factory: sessionmaker[Session]) -> list[str]:
    with factory() as session:
        return list(session.scalars(select(RouteEvent.id).order_by(RouteEvent.id)))


def writer_for(factory: object, **options: int | float) -> EventWriter:
    return EventWriter(cast(sessionmaker[Session], factory), **options)  # type: ignore[arg-type]


def test_events_and_candidates_are_written(factory: sessionmaker[Session]) -> None:
    writer = writer_for(factory, batch_size=2)
    for n in range(5):
        writer.submit(record(n))
    assert writer.pending("route-0003") is not None
    assert writer.flush() == 5
    assert writer.pending("route-0003") is None
    assert stored_ids(factory) == [f"route-{n:04d}" for n in range(5)]
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(RouteEventCandidate)) == 10
        event = session.get(RouteEvent, "route-0002")
        assert event is not None and event.created_at == record(2).created_at


def test_down_database_buffers_then_writes_drops_counted(factory: sessionmaker[Session]) -> None:
    flaky = FlakyFactory(factory)
    writer = writer_for(flaky, buffer_size=5, batch_size=2)
    for n in range(8):
        writer.submit(record(n))
    assert writer.dropped == 3  # the three oldest
    with pytest.raises(OperationalError):
        writer.write_batch()
    assert writer.dropped == 3 and writer.buffered == 5  # a failed batch is not lost
    assert writer.pending("route-0002") is None
    assert all(writer.pending(f"route-{n:04d}") for n in range(3, 8))  # feedback can find them
    assert stored_ids(factory) == []
    flaky.down = False
    assert writer.flush() == 5
    assert stored_ids(factory) == [f"route-{n:04d}" for n in range(3, 8)]
    assert writer.dropped == 3 and writer.buffered == 0


def test_an_event_the_database_refuses_is_dropped_and_the_rest_written(
    postgres_url: str,
) -> None:
    # PostgreSQL's text columns refuse U+0000 (SQLite stores it). The API refuses such a
    # query up front (tests/api/test_nul_characters.py); should another value ever be
    # refused, it used to fail its whole batch, retried for ever while later events waited.
    empty_database(postgres_url)
    engine = make_engine(postgres_url)
    factory = make_session_factory(engine)
    try:
        writer = writer_for(factory, batch_size=10)
        writer.submit(record(1))
        writer.submit(record(2, query="a\x00b"))
        writer.submit(record(3))
        assert writer.flush() == 2
        assert stored_ids(factory) == ["route-0001", "route-0003"]
        assert writer.buffered == 0 and writer.dropped == 1 and writer.written == 2
        writer.submit(record(4))  # and the writer goes on
        assert writer.flush() == 1 and writer.written == 3
    finally:
        engine.dispose()


def test_writer_thread_retries_until_the_database_is_back(factory: sessionmaker[Session]) -> None:
    flaky = FlakyFactory(factory)
    writer = writer_for(
        flaky, buffer_size=5, batch_size=2, flush_seconds=0.01, retry_max_seconds=0.05
    )
    writer.start()
    try:
        for n in range(8):
            writer.submit(record(n))
        flaky.wait_for_attempt_after(flaky.attempts)  # a failure after the last submit
        flaky.wait_for_attempt_after(flaky.attempts)  # and a retry after it
        assert stored_ids(factory) == []
        flaky.down = False
    finally:
        writer.stop()  # a clean stop writes whatever is still buffered
    assert stored_ids(factory) == [f"route-{n:04d}" for n in range(3, 8)]
    assert writer.dropped == 3 and writer.buffered == 0


def test_a_retried_batch_that_already_landed_is_not_duplicated(
    factory: sessionmaker[Session],
) -> None:
    writer = writer_for(factory)
    writer.submit(record(1))
    writer.flush()
    writer.submit(record(1))  # e.g. the commit landed but its acknowledgement was lost
    writer.submit(record(2))
    assert writer.flush() == 2
    assert stored_ids(factory) == ["route-0001", "route-0002"]


def test_queries_can_be_stored_hashed() -> None:
    hashed = stored_query("book a flight to Oslo", hashed=True)
    assert hashed.startswith("sha256:") and "Oslo" not in hashed and len(hashed) == 7 + 64
    assert stored_query("book a flight to Oslo", hashed=False) == "book a flight to Oslo"


@pytest.fixture
def blocked_postgres() -> Iterator[str]:
    """A migrated Postgres database of our own, so it can be made unreachable."""
    name = f"toolreach_down_{uuid.uuid4().hex[:10]}"
    _pg_execute(f'CREATE DATABASE "{name}"')
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        migrate.upgrade(url)
        yield name
    finally:
        _pg_execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        _pg_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_really_unreachable_postgres(blocked_postgres: str) -> None:
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{blocked_postgres}"
    engine = make_engine(url)
    factory = make_session_factory(engine)
    writer = EventWriter(factory, buffer_size=3, batch_size=10)
    _pg_execute(f'ALTER DATABASE "{blocked_postgres}" ALLOW_CONNECTIONS false')
    _pg_execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        f"WHERE datname = '{blocked_postgres}'"
    )
    try:
        for n in range(4):
            writer.submit(record(n))
        with pytest.raises(OperationalError):
            writer.write_batch()
        assert writer.buffered == 3 and writer.dropped == 1
        _pg_execute(f'ALTER DATABASE "{blocked_postgres}" ALLOW_CONNECTIONS true')
        assert writer.flush() == 3
        assert stored_ids(factory) == ["route-0001", "route-0002", "route-0003"]
    finally:
        engine.dispose()


def test_a_clean_shutdown_writes_what_is_buffered(database_url: str) -> None:
    settings = make_settings(database_url, event_flush_seconds=3600, hash_queries=True)
    with TestClient(create_app(settings, encoder=make_encoder("fake"))) as client:
        client.post("/v1/tools", json=weather_card(), headers=ADMIN)
        answers = [
            client.post("/v1/route", json={"query": f"weather {n}"}, headers=AGENT).json()
            for n in range(3)
        ]
        assert client.app.state.services.events.buffered == 3  # type: ignore[attr-defined]
    engine = make_engine(database_url)
    with make_session_factory(engine)() as session:
        stored = {e.id: e.query for e in session.scalars(select(RouteEvent))}
    engine.dispose()
    assert sorted(stored) == sorted(a["route_id"] for a in answers)
    hashed = {stored_query(f"weather {n}", hashed=True) for n in range(3)}
    assert set(stored.values()) == hashed  # TOOLREACH_HASH_QUERIES: no query text is stored
