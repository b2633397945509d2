"""Imports past the JSON body limit: POST /v1/tools/bulk with one tool a line (NDJSON),
streamed, all or nothing, with progress lines on request (issue 21)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.embedding.encoders import make_encoder
from app.main import create_app
from tests.conftest import ADMIN, AGENT, make_settings

NDJSON = {**ADMIN, "Content-Type": "application/x-ndjson"}


def lines(n: int, start: int = 0, padding: int = 400) -> list[bytes]:
    """``n`` tools, one a line, of ~``padding`` bytes each (MCP and native formats mixed)."""
    out = []
    for i in range(start, start + n):
        text = f"Harbour tide table number {i}. " + "Tides rise and fall. " * (padding // 21)
        tool = (
            {"name": f"tide_{i}", "description": text, "inputSchema": {"type": "object"}}
            if i % 2
            else {"name": f"tide_{i}", "description": text}
        )
        out.append(json.dumps(tool).encode())
    return out


def chunks(body: bytes, size: int = 65_536) -> Iterator[bytes]:
    """The body as a client streams it (chunked), cut in the middle of lines."""
    for start in range(0, len(body), size):
        yield body[start : start + size]


def test_an_import_past_the_json_limit_lands_streamed_line_by_line(client: TestClient) -> None:
    body = b"\n".join(lines(3000)) + b"\n"
    assert len(body) > 1_048_576
    too_big = {"tools": [json.loads(line) for line in lines(3000)]}
    assert client.post("/v1/tools/bulk", json=too_big, headers=ADMIN).status_code == 413
    answer = client.post(
        "/v1/tools/bulk", content=chunks(body), headers=NDJSON, params={"namespace": "tides"}
    )
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["created"]) == 3000
    listed = client.get("/v1/tools", params={"namespace": "tides"}, headers=AGENT).json()
    assert listed["total"] == 3000
    route = {"query": "tide table number 1234", "namespace": "tides", "k": 1}
    best = client.post("/v1/route", json=route, headers=AGENT).json()["candidates"][0]
    assert best["name"] == "tide_1234"  # routed at once: read-your-writes
    again = client.post(
        "/v1/tools/bulk", content=body, headers=NDJSON, params={"namespace": "tides"}
    )
    assert len(again.json()["unchanged"]) == 3000


def test_one_bad_line_writes_nothing_and_names_the_line(client: TestClient) -> None:
    body = [*lines(5), b"{not json", b"", json.dumps({"name": "no description"}).encode()]
    answer = client.post("/v1/tools/bulk", content=b"\n".join(body), headers=NDJSON)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert [reject["index"] for reject in error["details"]] == [5, 7]
    assert "2 of 8 lines are invalid" in error["message"]
    assert client.get("/v1/tools", headers=AGENT).json()["total"] == 0
    empty = client.post("/v1/tools/bulk", content=b"\n\n", headers=NDJSON)
    assert empty.status_code == 422


def test_progress_lines_then_the_result(client: TestClient) -> None:
    body = b"\n".join(lines(150, padding=20))  # no newline after the last line
    headers = {**NDJSON, "Accept": "application/x-ndjson"}
    answer = client.post("/v1/tools/bulk", content=body, headers=headers)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/x-ndjson")
    events = [json.loads(line) for line in answer.text.splitlines()]
    assert events[0] == {"stage": "parsed", "tools": 150}
    embedded = [e for e in events if e.get("stage") == "embedded"]
    assert embedded and embedded[-1] == {"stage": "embedded", "tools": 150, "of": 150}
    assert events[-2] == {"stage": "written", "tools": 150}
    assert len(events[-1]["result"]["created"]) == 150


@pytest.fixture
def small_limits(sqlite_url: str) -> Iterator[TestClient]:
    from tests.conftest import empty_database

    empty_database(sqlite_url)
    settings = make_settings(sqlite_url, max_body_bytes=2048, max_import_bytes=20_000)
    with TestClient(create_app(settings, encoder=make_encoder("fake"))) as client:
        yield client


def test_a_line_or_a_body_over_its_limit_is_refused(small_limits: TestClient) -> None:
    long_line = lines(1, padding=3000)[0]
    answer = small_limits.post("/v1/tools/bulk", content=long_line, headers=NDJSON)
    assert answer.status_code == 413
    assert "line 1" in answer.json()["error"]["message"]
    body = b"\n".join(lines(150, padding=100))
    assert len(body) > 20_000
    assert (
        small_limits.post("/v1/tools/bulk", content=chunks(body, 4096), headers=NDJSON).status_code
        == 413
    )
    assert small_limits.post("/v1/tools/bulk", content=body, headers=NDJSON).status_code == 413
    fits = b"\n".join(lines(20, padding=100))
    assert small_limits.post("/v1/tools/bulk", content=fits, headers=NDJSON).status_code == 200
