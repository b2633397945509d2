"""The engine's bounds (app/db.py): the server's timeouts in every transaction, the pool and
the prepare threshold as set, and, on a frozen server of the test's own, a client deadline on
a statement already sent and on the ping of a pooled connection."""

from __future__ import annotations

import inspect
import os
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from app.db import DatabaseLimits, DatabaseUnavailable, make_engine, make_probe, timed_out
from app.db_health import DatabaseHealth
from tests.api.own_postgres import OwnPostgres, own_postgres, postgres_bin

LIMITS = DatabaseLimits(
    connect_timeout=2,
    statement_timeout=1.5,
    lock_timeout=0.5,
    pool_timeout=1.0,
    pool_size=2,
    max_overflow=1,
    prepare_threshold=None,
)
own_cluster = pytest.mark.skipif(
    postgres_bin() is None or os.geteuid() != 0,
    reason="needs root and a local PostgreSQL installation to run a cluster of its own",
)


class Recorder:
    """A gate that only remembers what it was told, and refuses nothing."""

    def __init__(self) -> None:
        self.stalls: list[str] = []

    def check(self) -> None:
        pass

    def stalled(self, reason: str) -> None:
        self.stalls.append(reason)


def test_psycopg_gives_every_wait_a_timeout() -> None:
    """The client deadline rides on Connection.wait(timeout=) (psycopg 3.3.9 has it)."""
    assert "timeout" in inspect.signature(psycopg.Connection.wait).parameters


def test_each_transaction_runs_under_the_limits_and_the_pool_is_as_set(postgres_url: str) -> None:
    engine = make_engine(postgres_url, LIMITS)
    try:
        assert (engine.pool.size(), engine.pool._max_overflow, engine.pool._timeout) == (2, 1, 1.0)  # type: ignore[attr-defined]
        with engine.connect() as connection:
            shown = connection.execute(text("SHOW statement_timeout")).scalar()
            assert shown == "1500ms"
            assert connection.execute(text("SHOW lock_timeout")).scalar() == "500ms"
            raw = connection.connection.dbapi_connection
            assert raw is not None and raw.prepare_threshold is None  # type: ignore[attr-defined]
        start = time.monotonic()
        with pytest.raises(OperationalError, match="statement timeout"), engine.connect() as c:
            c.execute(text("SELECT pg_sleep(5)"))
        assert time.monotonic() - start < 4  # the server's 1.5 s, not the 5 s asked for
    finally:
        engine.dispose()


def test_a_lock_held_elsewhere_is_a_fast_error(postgres_url: str) -> None:
    engine = make_engine(postgres_url, LIMITS)
    try:
        with engine.begin() as holder:
            holder.execute(text("SELECT revision FROM registry_state FOR UPDATE"))
            with pytest.raises(OperationalError, match="lock timeout"), engine.begin() as waiter:
                waiter.execute(text("UPDATE registry_state SET revision = revision"))
    finally:
        engine.dispose()


@pytest.fixture
def frozen_ready() -> Iterator[OwnPostgres]:
    with own_postgres() as cluster:
        yield cluster


def elapsed(call: object) -> tuple[BaseException | None, float]:
    start = time.monotonic()
    try:
        call()  # type: ignore[operator]
    except Exception as exc:
        return exc, time.monotonic() - start
    return None, time.monotonic() - start


@own_cluster
def test_a_frozen_server_cannot_hold_a_statement_a_ping_or_a_connect(
    frozen_ready: OwnPostgres,
) -> None:
    url = frozen_ready.create_database("limits")
    gate = Recorder()
    engine = make_engine(url, LIMITS, gate)
    try:
        with engine.connect() as connection:  # an idle pooled connection, pinged when taken
            connection.execute(text("SELECT 1"))
        frozen_ready.freeze()
        # Its ping: 2 s; the new connection that replaces it: 2 s more. Never a hang.
        error, took = elapsed(lambda: engine.connect().close())
        assert isinstance(error, OperationalError) and timed_out(error), error
        assert took < 10, took
        assert gate.stalls == ["no answer from the database within 2 s", "no connection within 2 s"]
        frozen_ready.thaw()

        in_flight = engine.connect()
        in_flight.execute(text("SELECT 1"))
        frozen_ready.freeze()
        error, took = elapsed(lambda: in_flight.execute(text("SELECT 1")))
        assert isinstance(error, OperationalError) and timed_out(error), error
        assert 3 <= took < 10, took  # statement 1.5 s + connect 2 s, then closed
        assert in_flight.invalidated and gate.stalls[-1].endswith("within 3.5 s")
        in_flight.close()
    finally:
        frozen_ready.thaw()
        engine.dispose()
    with make_engine(url, LIMITS).connect() as connection:  # thawed: all is well again
        assert connection.execute(text("SELECT 1")).scalar() == 1


@own_cluster
def test_the_health_probe_sees_a_freeze_and_refuses_work_until_the_thaw(
    frozen_ready: OwnPostgres,
) -> None:
    url = frozen_ready.create_database("probe")
    health = DatabaseHealth(interval=0.2)
    engine = make_engine(url, LIMITS, health)
    health.probe = make_probe(engine, LIMITS)
    health.start()
    try:
        assert health.probe_once() and health.state.reachable
        frozen_ready.freeze()
        deadline = time.monotonic() + 15
        while health.state.reachable and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not health.state.reachable
        error, took = elapsed(lambda: engine.connect().close())
        assert isinstance(error, DatabaseUnavailable) and took < 0.5, (error, took)
        frozen_ready.thaw()
        while not health.state.reachable and time.monotonic() < deadline + 15:
            time.sleep(0.05)
        assert health.state.reachable
        with engine.connect() as connection:
            assert connection.execute(text("SELECT 1")).scalar() == 1
    finally:
        frozen_ready.thaw()
        health.stop()
        engine.dispose()


def test_a_probe_that_finds_its_connection_killed_connects_again(postgres_url: str) -> None:
    """One terminated backend (a restart, an administrator) is not an outage."""
    engine = make_engine(postgres_url, LIMITS)
    probe = make_probe(engine, LIMITS)
    try:
        probe()
        with engine.connect() as connection:
            connection.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
        probe()  # no exception: a fresh connection answered
    finally:
        probe.close()
        engine.dispose()


def test_the_probe_runs_one_at_a_time_and_stops() -> None:
    calls, running, most = [], [0], [0]
    lock = threading.Lock()

    class SlowProbe:
        def __call__(self) -> None:
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.15)
            calls.append(1)
            with lock:
                running[0] -= 1

        def close(self) -> None:
            calls.append(0)

    health = DatabaseHealth(SlowProbe(), interval=0.01)
    health.start()
    time.sleep(0.5)
    health.stop()
    assert most[0] == 1 and calls.count(1) >= 2 and calls[-1] == 0
