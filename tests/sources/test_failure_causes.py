"""A call that cannot reach its source says why (issue 42 item 1).

Before: a stopped MCP server answered `protocol_error`, not retryable, and a name that does
not resolve answered `outbound_refused` ("the outbound rules forbid this destination"),
though the rules forbade nothing. Each cause, for an OpenAPI source (its `base_url` at a
server that fails) and an MCP source (behind a proxy the test makes fail, or moved to a
failing address), is answered with its code, whether to retry, and `details.cause`:

| cause | code | retryable |
|---|---|---|
| refused: nothing listens | unreachable | yes |
| reset | unreachable | yes |
| the name does not resolve | unreachable | yes |
| TLS: the certificate is not trusted | unreachable | no |
| no answer in time | timeout | yes |
| the server closed the connection without an answer | unreachable | yes |
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from app.sources.models import Source, SourceTool
from tests.api.loop_support import services_of
from tests.conftest import ADMIN, AGENT
from tests.sources.broken import Switch, failing, refused_port
from tests.sources.conftest import app_client
from tests.sources.echo_upstream import BASE, EchoUpstream
from tests.sources.hostile_mcp import HostileMcp

NOWHERE = "nowhere.invalid"  # RFC 2606: never resolves
EXPECTED = {  # cause: (code, retryable, a word the message holds)
    "refused": ("unreachable", True, "refused"),
    "reset": ("unreachable", True, "reset"),
    "dns": ("unreachable", True, "does not resolve"),
    "tls": ("unreachable", False, "certificate"),
    "timeout": ("timeout", True, "in time"),
    "closed": ("unreachable", True, "closed"),
}
BEHAVIOUR = {"reset": "reset", "closed": "close", "timeout": "silent", "tls": "tls"}


def settings() -> dict[str, Any]:
    return {
        "gateway_timeout_seconds": 2,
        "gateway_breaker_failures": 1000,
        "gateway_attempts": 1,
    }


def said(answer: dict[str, Any], cause: str) -> None:
    code, retryable, word = EXPECTED[cause]
    assert answer["ok"] is False, answer
    error = answer["error"]
    assert (error["code"], error["retryable"]) == (code, retryable), (cause, error)
    assert error["details"] == {"cause": cause}, (cause, error)
    assert word in error["message"], (cause, error)


def call(gw: TestClient, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = gw.post("/v1/call", json={"name": name, "arguments": arguments}, headers=AGENT)
    assert response.status_code == 200, response.text
    return dict(response.json())


def register(gw: TestClient, body: dict[str, Any]) -> None:
    response = gw.post("/v1/sources", json=body, headers=ADMIN)
    assert response.status_code == 201, response.text


@pytest.fixture
def gw(sqlite_db: str) -> Iterator[TestClient]:
    with app_client(sqlite_db, **settings()) as client:
        yield client


def openapi_at(gw: TestClient, echo: EchoUpstream, name: str, base_url: str) -> None:
    register(
        gw,
        {
            "name": name,
            "namespace": name,
            "kind": "openapi",
            "url": f"{echo.url}{BASE}/openapi.json",
            "base_url": base_url,
        },
    )


def call_in(gw: TestClient, namespace: str) -> dict[str, Any]:
    body = {"name": "echo_get", "arguments": {}, "namespace": namespace}
    response = gw.post("/v1/call", json=body, headers=AGENT)
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_an_openapi_sources_failures_name_their_cause(
    gw: TestClient, echo: EchoUpstream, tmp_path: Path
) -> None:
    openapi_at(gw, echo, "refused", f"http://127.0.0.1:{refused_port()}")
    said(call_in(gw, "refused"), "refused")
    openapi_at(gw, echo, "dns", f"http://127.0.0.1:{refused_port()}")
    move_server(gw, "dns", f"http://{NOWHERE}:8080")  # a base_url that does not resolve
    said(call_in(gw, "dns"), "dns")  # is refused at registration, naming the cause
    for cause, behaviour in BEHAVIOUR.items():
        with failing(behaviour, tmp_path) as port:
            scheme = "https" if cause == "tls" else "http"
            openapi_at(gw, echo, cause, f"{scheme}://127.0.0.1:{port}")
            said(call_in(gw, cause), cause)


def move_server(gw: TestClient, source: str, server: str) -> None:
    """The OpenAPI source's operations are now at ``server`` (its name stopped resolving)."""
    engine = services_of(gw).engine
    with engine.begin() as connection:
        source_id = connection.execute(select(Source.id).where(Source.name == source)).scalar()
        rows = connection.execute(
            select(SourceTool.id, SourceTool.binding).where(SourceTool.source_id == source_id)
        ).all()
        for row_id, binding in rows:
            moved = {**binding, "server": server}
            statement = update(SourceTool).where(SourceTool.id == row_id).values(binding=moved)
            connection.execute(statement)


def move(gw: TestClient, source: str, url: str) -> None:
    """The source's server is now at ``url`` (as a re-registration would say)."""
    engine = services_of(gw).engine
    with engine.begin() as connection:
        config = connection.execute(select(Source.config).where(Source.name == source)).scalar()
        moved = {**config, "url": url}
        connection.execute(update(Source).where(Source.name == source).values(config=moved))


def test_an_mcp_sources_failures_name_their_cause(
    gw: TestClient, hostile: HostileMcp, tmp_path: Path
) -> None:
    target = int(hostile.url.rsplit(":", 1)[1])
    switch = Switch(target)
    register(gw, {"name": "hostile", "kind": "mcp", "url": f"http://127.0.0.1:{switch.port}/mcp"})
    assert call(gw, "sleep", {"seconds": 0})["ok"]
    for cause in ("reset", "closed", "timeout"):
        switch.set(BEHAVIOUR[cause])
        said(call(gw, "sleep", {"seconds": 0}), cause)
    switch.stop()  # a stopped server: before, protocol_error, not retryable
    said(call(gw, "sleep", {"seconds": 0}), "refused")
    move(gw, "hostile", f"http://{NOWHERE}:8080/mcp")
    said(call(gw, "sleep", {"seconds": 0}), "dns")
    with failing("tls", tmp_path) as port:
        move(gw, "hostile", f"https://127.0.0.1:{port}/mcp")
        said(call(gw, "sleep", {"seconds": 0}), "tls")


@pytest.mark.parametrize("cause", ["refused", "dns", "tls"])
def test_a_source_that_cannot_be_read_says_why(gw: TestClient, tmp_path: Path, cause: str) -> None:
    """The same causes when a source is registered (502 `source_failed`, the cause in the
    message)."""
    urls = {"refused": f"http://127.0.0.1:{refused_port()}/mcp", "dns": f"http://{NOWHERE}/mcp"}
    with failing("tls", tmp_path) as port:
        url = urls.get(cause, f"https://127.0.0.1:{port}/mcp")
        response = gw.post(
            "/v1/sources", json={"name": "x", "kind": "mcp", "url": url}, headers=ADMIN
        )
    assert response.status_code == 502, response.text
    message = response.json()["error"]["message"]
    assert EXPECTED[cause][2] in message, message
