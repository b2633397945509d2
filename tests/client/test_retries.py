"""Retries, with httpx's MockTransport standing in for the service: refusals (503, 429)
that a real service sends only under load or a sick database."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest
from toolreach_client import (
    AsyncToolReach,
    Conflict,
    RateLimited,
    RetryPolicy,
    ToolReach,
    TransportError,
    Unavailable,
)
from toolreach_client.retry import retry_after

ROUTE = {"route_id": "r1", "namespace": "default", "model": "fake", "candidates": []}
CARD = {
    "name": "get_stock_price",
    "namespace": "default",
    "summary": "Latest price.",
    "description": "Latest price.",
    "parameters": {"type": "object", "properties": {}},
    "version": 1,
    "created_at": "2026-01-01T00:00:00Z",
    "updated_at": "2026-01-01T00:00:00Z",
}
Answer = httpx.Response | Exception


def refusal(status: int, retry: str | None = "1", code: str = "unavailable") -> httpx.Response:
    headers = {"Retry-After": retry} if retry is not None else {}
    body = {"error": {"code": code, "message": "try later", "details": None}}
    return httpx.Response(status, json=body, headers=headers)


class Script:
    """Answers in order; records each request and each wait."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []
        self.waits: list[float] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def client(self, **retry: Any) -> ToolReach:
        policy = RetryPolicy(rng=random.Random(7), **retry)
        return ToolReach(
            "http://toolreach.test",
            transport=httpx.MockTransport(self),
            retry=policy,
            sleep=self.waits.append,
        )


def test_a_503_is_retried_after_its_retry_after_with_jitter() -> None:
    script = Script(refusal(503, "2"), refusal(503, "2"), httpx.Response(200, json=ROUTE))
    assert script.client().route("weather").route_id == "r1"
    assert len(script.requests) == 3
    assert all(2.0 <= w <= 2.2 for w in script.waits) and script.waits[0] != script.waits[1]


def test_a_429_with_an_http_date() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=3), usegmt=True)
    script = Script(refusal(429, when, "too_many_requests"), httpx.Response(200, json=ROUTE))
    script.client().route("weather")
    assert 1.5 < script.waits[0] <= 3.3


def test_retries_are_bounded_and_the_last_refusal_is_raised() -> None:
    script = Script(*[refusal(503, "1", "overloaded")] * 3)
    with pytest.raises(Unavailable) as refused:
        script.client(max_retries=2).route("weather")
    assert (refused.value.code, refused.value.retry_after) == ("overloaded", 1.0)
    assert len(script.requests) == 3 and len(script.waits) == 2


def test_a_retry_after_beyond_the_max_wait_is_not_waited_for() -> None:
    script = Script(refusal(429, "120", "too_many_requests"))
    with pytest.raises(RateLimited) as limited:
        script.client(max_wait=30).route("weather")
    assert limited.value.retry_after == 120 and script.waits == []


def test_without_retry_after_the_backoff_grows_with_full_jitter() -> None:
    policy = RetryPolicy(backoff=0.5, max_wait=3, rng=random.Random(1))
    waits = [policy.delay(attempt, None) for attempt in (1, 2, 3, 4)]
    assert waits[3] is None
    assert all(w is not None and 0 <= w <= min(3, 0.5 * 2**i) for i, w in enumerate(waits[:3]))
    script = Script(refusal(503, None), httpx.Response(200, json=ROUTE))
    script.client().route("weather")
    assert 0 <= script.waits[0] <= 0.5


def test_retry_after_reads_both_forms() -> None:
    def header(value: str) -> float | None:
        return retry_after(httpx.Response(503, headers={"Retry-After": value}))

    assert header("5") == 5.0 and header("soon") is None
    assert header("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a past date: now


@pytest.mark.parametrize(
    ("method", "call"),
    [
        ("route", lambda c: c.route("weather")),
        ("validate", lambda c: c.validate("x", {})),
        ("feedback", lambda c: c.feedback("r1", "x")),
        ("put", lambda c: c.tools.put("x", {"description": "d"})),
        ("get", lambda c: c.tools.get("x")),
    ],
)
def test_idempotent_requests_are_repeated_when_no_answer_came(
    method: str, call: Callable[[ToolReach], Any]
) -> None:
    answers = {
        "route": ROUTE,
        "validate": {"valid": True, "errors": [], "did_you_mean": []},
        "feedback": {
            "route_id": "r1",
            "namespace": "default",
            "chosen": "x",
            "outcome": "success",
            "verdict": "hit_at_1",
        },
        "put": CARD,
        "get": CARD,
    }
    script = Script(httpx.ReadTimeout("slow"), httpx.Response(200, json=answers[method]))
    call(script.client())
    assert len(script.requests) == 2


def test_a_tool_call_with_no_answer_is_not_repeated_but_a_refusal_is() -> None:
    result = {"ok": True, "name": "send_email", "namespace": "default", "result": {"id": 1}}
    script = Script(httpx.ReadTimeout("slow"))
    with pytest.raises(TransportError):
        script.client().call("send_email", {"to": "a@example.com"})
    assert len(script.requests) == 1  # it may have sent the email: never twice

    script = Script(refusal(503), httpx.ConnectError("refused"), httpx.Response(200, json=result))
    assert script.client().call("send_email", {"to": "a@example.com"}).result == {"id": 1}
    assert len(script.requests) == 3  # refused, then never connected: nothing ran


def test_a_create_whose_first_try_landed_unanswered_is_its_own_card() -> None:
    conflict = refusal(409, None, "conflict")
    card = {k: CARD[k] for k in ("name", "description")}
    script = Script(httpx.ReadTimeout("slow"), conflict, httpx.Response(200, json=CARD))
    assert script.client().tools.create(card).version == 1
    assert [r.method for r in script.requests] == ["POST", "POST", "GET"]

    other = {"name": "get_stock_price", "description": "Someone else's card."}
    script = Script(httpx.ReadTimeout("slow"), conflict, httpx.Response(200, json=CARD))
    with pytest.raises(Conflict):
        script.client().tools.create(other)

    script = Script(conflict)  # answered at once: the name was taken before
    with pytest.raises(Conflict):
        script.client().tools.create(card)
    assert len(script.requests) == 1


def test_a_report_waits_for_a_route_another_replica_has_not_written_yet() -> None:
    feedback = {
        "route_id": "r1",
        "namespace": "default",
        "chosen": "x",
        "outcome": "success",
        "verdict": "hit_at_1",
    }
    script = Script(refusal(404, None, "not_found"), httpx.Response(200, json=feedback))
    assert script.client().feedback("r1", "x").verdict == "hit_at_1"
    assert 1.0 <= script.waits[0] <= 1.1


def test_the_async_client_retries_the_same_way() -> None:
    script = Script(refusal(503, "1"), httpx.Response(200, json=ROUTE))
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def scenario() -> str:
        client = AsyncToolReach(
            "http://toolreach.test", transport=httpx.MockTransport(script), sleep=sleep
        )
        async with client:
            return (await client.route("weather")).route_id

    assert asyncio.run(scenario()) == "r1"
    assert len(waits) == 1 and 1.0 <= waits[0] <= 1.1
    assert json.loads(script.requests[0].content) == {
        "query": "weather",
        "k": 3,
        "namespace": "default",
        "format": "raw",
    }
