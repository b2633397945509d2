"""The parts that keep a sick database from hanging the service, without a database: the
database settings, the health state and its gate, the queue of validated calls."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from app.db import DatabaseUnavailable, NoAnswer
from app.db_health import DatabaseHealth
from app.loop import validation
from app.loop.events import EventWriter
from app.loop.validation import ValidatedCalls
from app.settings import SettingsError, load_settings


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("PREPARE_THRESHOLD", "LOCK_TIMEOUT", "STATEMENT_TIMEOUT", "CONNECT_TIMEOUT"):
        monkeypatch.delenv(f"TOOLREACH_DATABASE_{name}", raising=False)
    return monkeypatch


@pytest.mark.parametrize(("value", "expected"), [("none", None), ("None", None), ("0", 0)])
def test_the_prepare_threshold_may_be_none(
    no_env: pytest.MonkeyPatch, value: str, expected: int | None
) -> None:
    no_env.setenv("TOOLREACH_DATABASE_PREPARE_THRESHOLD", value)
    settings = load_settings(_env_file=None)
    assert settings.database.prepare_threshold == expected


def test_the_database_limits_default_to_a_few_seconds(no_env: pytest.MonkeyPatch) -> None:
    limits = load_settings(_env_file=None).database
    assert (limits.connect_timeout, limits.statement_timeout, limits.lock_timeout) == (3, 10, 5)
    assert (limits.pool_timeout, limits.pool_size, limits.max_overflow) == (5, 5, 10)
    assert limits.prepare_threshold == 5 and limits.answer_deadline == 13


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("CONNECT_TIMEOUT", "1", "TOOLREACH_DATABASE_CONNECT_TIMEOUT"),  # psycopg: at least 2
        ("LOCK_TIMEOUT", "60", "must not exceed TOOLREACH_DATABASE_STATEMENT_TIMEOUT"),
        ("PREPARE_THRESHOLD", "never", "TOOLREACH_DATABASE_PREPARE_THRESHOLD"),
    ],
)
def test_a_bad_database_limit_stops_start_up(
    no_env: pytest.MonkeyPatch, name: str, value: str, says: str
) -> None:
    no_env.setenv(f"TOOLREACH_DATABASE_{name}", value)
    with pytest.raises(SettingsError, match=says):
        load_settings(_env_file=None)


class Probe:
    def __init__(self) -> None:
        self.error: Exception | None = None

    def __call__(self) -> None:
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        pass


def test_a_stall_refuses_work_until_the_probe_gets_an_answer() -> None:
    probe = Probe()
    health = DatabaseHealth(probe, interval=3600)
    health.stalled("no answer")
    health.check()  # no probe running (the command line): nothing would reopen the gate
    health.start()
    try:
        with pytest.raises(DatabaseUnavailable, match="no answer"):
            health.check()
        assert not health.state.reachable and health.state.error == "no answer"
        assert health.probe_once()
        health.check()
        assert health.state.reachable and health.state.error is None
    finally:
        health.stop()


def test_a_refusal_is_not_ready_but_refuses_nothing_a_timeout_refuses() -> None:
    probe = Probe()
    health = DatabaseHealth(probe, interval=3600)
    health.start()
    try:
        probe.error = OperationalError("SELECT 1", None, Exception("connection refused"))
        assert not health.probe_once()
        assert health.state.error == "connection refused"
        health.check()  # a refusal is fast anyway: each request finds it out itself
        probe.error = NoAnswer("no answer from the database within 3 s")
        assert not health.probe_once()
        with pytest.raises(DatabaseUnavailable):
            health.check()
    finally:
        health.stop()


def calls(monkeypatch: pytest.MonkeyPatch, outcomes: list[Any]) -> tuple[ValidatedCalls, list[str]]:
    """A queue whose recording of each call takes the next outcome: an exception raised, or a
    result returned; the route ids it recorded."""
    recorded: list[str] = []

    def record(
        _factory: Any, _writer: Any, _index: Any, route_id: str, _name: str, _visible: Any
    ) -> bool:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        recorded.append(route_id)
        return bool(outcome)

    monkeypatch.setattr(validation, "record_validated_call", record)
    writer = EventWriter(None)  # type: ignore[arg-type]
    return ValidatedCalls(None, writer, None, buffer_size=3), recorded  # type: ignore[arg-type]


def test_validated_calls_wait_out_the_database_and_are_written_with_the_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    down = OperationalError("INSERT", None, Exception("server closed the connection"))
    queue, recorded = calls(monkeypatch, [down, True, DatabaseUnavailable("stalled"), True])
    queue.submit("r1", "get_weather")
    queue.submit("r2", "get_weather")
    with pytest.raises(OperationalError):
        queue.write()
    assert queue.waiting == 2 and recorded == []
    with pytest.raises(DatabaseUnavailable):
        queue._writer.flush()  # the writer's flush writes the queue after its events
    assert queue.waiting == 1 and recorded == ["r1"]
    assert queue.write() == 1 and queue.waiting == 0 and recorded == ["r1", "r2"]


def test_validated_calls_are_bounded_and_a_bad_one_is_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queue, recorded = calls(monkeypatch, [ValueError("a bug"), False, True])
    for i in range(5):
        queue.submit(f"r{i}", "get_weather")
    assert queue.waiting == 3 and queue.dropped == 2  # r0 and r1, the oldest
    assert queue.write() == 1  # r2 fails for a bug: logged and dropped; r3 ignored; r4 recorded
    assert recorded == ["r3", "r4"] and queue.dropped == 3
