"""An upstream's answer nested deeper than the gateway passes on (issue 38 item 7).

The probe: at about 300 levels `/v1/call` answered 500 ("Maximum serialization depth
exceeded"), `/v1/call/batch` answered 500 as a whole (the other calls' results lost after
they ran), and at about 700 levels each call wrote about 142 KB of traceback to the log. Now
each such call is its own structured error, `response_too_deep`, in a batch beside the
others' results, and the log stays small. OpenAPI (tests/sources/echo_upstream.py) and MCP
(tests/sources/hostile_mcp.py) sources alike.
"""

from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from tests.conftest import ADMIN, AGENT
from tests.sources.conftest import app_client
from tests.sources.echo_upstream import BASE, EchoUpstream
from tests.sources.hostile_mcp import HostileMcp

LEVELS = (300, 700, 5000, 100_000)


@pytest.fixture
def gw(sqlite_db: str, echo: EchoUpstream, hostile: HostileMcp) -> TestClient:
    with app_client(sqlite_db) as client:
        sources = [
            {"name": "echo", "kind": "openapi", "url": f"{echo.url}{BASE}/openapi.json"},
            {"name": "hostile", "kind": "mcp", "url": f"{hostile.url}/mcp"},
        ]
        for body in sources:
            response = client.post("/v1/sources", json=body, headers=ADMIN)
            assert response.status_code == 201, response.text
        yield client


def deep(levels: int, status: int = 200) -> dict:
    return {"name": "answer_deep", "arguments": {"levels": str(levels), "status": str(status)}}


def mcp_deep(levels: int) -> dict:
    return {"name": "deep", "arguments": {"levels": levels}}


def too_deep(answer: dict) -> None:
    assert answer["ok"] is False, answer
    error = answer["error"]
    assert error["code"] == "response_too_deep" and not error["retryable"], error
    assert "levels" in error["message"] and error["details"] is None


def test_a_deep_answer_is_its_own_calls_error_and_the_log_stays_small(
    gw: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for levels in LEVELS:
        for call in (deep(levels), deep(levels, status=422), deep(levels, 503), mcp_deep(levels)):
            response = gw.post("/v1/call", json=call, headers=AGENT)
            assert response.status_code == 200, (levels, call, response.text[:300])
            too_deep(response.json())
    assert len(caplog.text) < 50_000, len(caplog.text)
    assert "Traceback" not in caplog.text


def test_a_deep_answer_in_a_batch_fails_alone(gw: TestClient) -> None:
    calls = [
        {"name": "echo_get", "arguments": {"q": "first"}},
        deep(300),
        mcp_deep(700),
        {"name": "sleep", "arguments": {"seconds": 0}},
        deep(20),
    ]
    response = gw.post("/v1/call/batch", json={"calls": calls}, headers=AGENT)
    assert response.status_code == 200, response.text[:300]
    first, deep_http, deep_mcp, slept, shallow = response.json()["results"]
    assert first["ok"] and first["result"]["body"]["query"] == {"q": ["first"]}
    too_deep(deep_http)
    too_deep(deep_mcp)
    assert slept["ok"] and shallow["ok"]  # 20 levels are passed on as they are
