"""Statistics over time: buckets by hour and day, time windows, percentiles; the purge."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.cli.main import main
from app.db import unit_of_work
from app.loop.events import RouteEventCandidateRecord, RouteEventRecord
from app.loop.feedback import record_feedback
from app.loop.models import Feedback, RouteEvent
from app.schemas import FeedbackRequest
from tests.api.loop_support import VIEWER, services_of

DAY1 = datetime(2026, 11, 1, tzinfo=UTC)
# (time, latency ms, candidates, chosen): a miss on day 1 and a newer miss on day 3
SCRIPT: list[tuple[datetime, float, tuple[str, ...], str | None]] = [
    (DAY1 + timedelta(hours=10, minutes=15), 1.0, ("get_weather", "send_email"), "get_weather"),
    (DAY1 + timedelta(hours=10, minutes=45), 2.0, ("get_weather", "send_email"), "send_email"),
    (DAY1 + timedelta(hours=11, minutes=5), 3.0, ("send_email",), "convert_currency"),
    (DAY1 + timedelta(days=1, hours=9), 4.0, ("convert_currency",), None),
    (DAY1 + timedelta(days=2, hours=23, minutes=59), 5.0, ("get_weather",), "send_email"),
]


def seed(client: TestClient) -> None:
    services = services_of(client)
    for n, (moment, latency, candidates, _) in enumerate(SCRIPT):
        services.events.submit(
            RouteEventRecord(
                route_id=f"r{n}",
                created_at=moment,
                namespace="default",
                query=f"query {n}",
                k=2,
                latency_ms=latency,
                model="fake",
                candidates=tuple(RouteEventCandidateRecord(c, 1.0, {}) for c in candidates),
            )
        )
    with unit_of_work(services.session_factory) as session:
        for n, (*_, chosen) in enumerate(SCRIPT):
            request = FeedbackRequest(route_id=f"r{n}", chosen=chosen, outcome="success")
            record_feedback(session, services.events, services.index, request)
    services.events.flush()


def stats(client: TestClient, **params: str) -> dict[str, Any]:
    response = client.get("/v1/stats", params=params, headers=VIEWER)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def starts(body: dict[str, Any]) -> list[tuple[str, int, int]]:
    return [(b["start"][:16], b["routes"], b["miss"]) for b in body["buckets"]]


def test_buckets_windows_and_percentiles(loop: TestClient) -> None:
    seed(loop)
    by_day = stats(loop)
    assert starts(by_day) == [
        ("2026-11-01T00:00", 3, 1),
        ("2026-11-02T00:00", 1, 0),
        ("2026-11-03T00:00", 1, 1),
    ]
    assert datetime.fromisoformat(by_day["buckets"][0]["start"]) == DAY1
    assert (by_day["hit_at_1"], by_day["hit_at_k"], by_day["miss"], by_day["none_fit"]) == (
        1,
        2,
        2,
        1,
    )
    assert by_day["latency_ms"] == {"p50": 3.0, "p95": 4.8, "p99": 4.96}
    assert [m["route_id"] for m in by_day["misroutes"]] == ["r4", "r2"]  # newest first
    assert by_day["misroutes"][1]["candidates"] == ["send_email"]

    by_hour = stats(loop, bucket="hour")
    assert starts(by_hour) == [
        ("2026-11-01T10:00", 2, 0),
        ("2026-11-01T11:00", 1, 1),
        ("2026-11-02T09:00", 1, 0),
        ("2026-11-03T23:00", 1, 1),
    ]
    window = stats(loop, since="2026-11-01T10:45:00Z", until="2026-11-02T09:00:00Z")
    assert window["routes"] == 2  # since is inclusive, until exclusive
    offset = stats(loop, since="2026-11-03T01:00:00+02:00")  # 2026-11-02T23:00Z
    assert offset["routes"] == 1 and offset["miss"] == 1
    naive = stats(loop, until="2026-11-01T11:00:00")  # no offset: UTC
    assert naive["routes"] == 2

    email = stats(loop, tool="send_email")
    assert email["routes"] == 4  # offered in r0, r1, r2; chosen in r1, r4
    assert [t for t in email["tools"] if t["name"] == "send_email"] == [
        {
            "namespace": "default",
            "name": "send_email",
            "offered": 3,
            "offered_first": 1,
            "chosen": 2,
            "chosen_when_not_offered": 1,
            "passed_over": 2,
            "success": 2,
        }
    ]
    assert email["confusions"][0] == {
        "namespace": "default",
        "offered_first": "get_weather",
        "chosen": "send_email",
        "count": 2,
    }


@pytest.mark.parametrize(
    "value", ["0.5", "1700000000", "-1", "now", "yesterday", "1e9", "12-01-2026", ""]
)
@pytest.mark.parametrize("bound", ["since", "until"])
def test_a_time_that_is_not_iso_8601_is_refused(loop: TestClient, bound: str, value: str) -> None:
    """A number was read as seconds since 1970 (``until=0.5`` was 1970-01-01T00:00:00.5Z)."""
    response = loop.get("/v1/stats", params={bound: value}, headers=VIEWER)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_input"
    assert error["details"][0]["loc"] == ["query", bound]


@pytest.mark.parametrize("value", ["2026-11-02", "2026-11-02T00:00:00Z", "2026-11-02 00:00"])
def test_an_iso_date_or_time_is_a_bound(loop: TestClient, value: str) -> None:
    response = loop.get("/v1/stats", params={"until": value}, headers=VIEWER)
    assert response.status_code == 200, response.text


def test_purge_keeps_the_tables_bounded(
    loop: TestClient,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    seed(loop)
    services = services_of(loop)
    now = datetime.now(UTC)
    services.events.submit(RouteEventRecord("fresh", now, "default", "q", 1, 1.0, "fake", ()))
    services.events.flush()
    monkeypatch.setenv("TOOLREACH_DATABASE_URL", database_url)
    assert main(["purge", "--older-than", "1"]) == 0
    out = capsys.readouterr()
    assert "purged 5 route events" in out.out
    with unit_of_work(services.session_factory) as session:
        assert list(session.scalars(select(RouteEvent.id))) == ["fresh"]
        assert session.scalar(select(func.count()).select_from(Feedback)) == 0
