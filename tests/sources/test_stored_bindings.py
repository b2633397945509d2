"""Bindings in the database (``source_tools.binding``, read by app/sources/binding.py): a
sync stores the JSON it always stored, a binding stored that way is called as before, and
one that does not fit its type is ``not_callable`` naming the tool: nothing is sent, never
a 500 or an ``internal`` error (issue 39 item 4)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from app.sources.models import Source, SourceTool
from tests.api.loop_support import services_of
from tests.conftest import ADMIN
from tests.sources.echo_upstream import BASE, EchoUpstream
from tests.sources.hostile_mcp import HostileMcp
from tests.sources.test_hostile_http import call, register
from tests.sources.test_hostile_mcp import add


def _param(arg: str, where: str) -> dict[str, Any]:
    return {
        "arg": arg,
        "in": where,
        "name": arg,
        "style": None,
        "explode": None,
        "collection": None,
    }


def as_stored_before(echo: EchoUpstream) -> dict[str, dict[str, Any]]:
    """The echo upstream's bindings as the sources wrote them before they were a type."""
    server = f"{echo.url}{BASE}"
    return {
        "echo_get": {
            "kind": "http", "method": "GET", "server": server, "path": "/echo", "safe": True,
            "params": [_param("q", "query"), _param("X-Note", "header"),
                       _param("session", "cookie")],
            "body": None,
        },
        "echo_post": {
            "kind": "http", "method": "POST", "server": server, "path": "/echo", "safe": False,
            "params": [], "body": {"media": "application/json", "fields": ["text"]},
        },
        "get_nested_file": {
            "kind": "http", "method": "GET", "server": server,
            "path": "/files/{folder}/{file_id}", "safe": True,
            "params": [_param("folder", "path"), _param("file_id", "path")], "body": None,
        },
    }  # fmt: skip


def stored(gw: TestClient, source: str) -> dict[str, Any]:
    """Each tool's binding as the database holds it."""
    with services_of(gw).engine.connect() as connection:
        rows = connection.execute(
            select(SourceTool.name, SourceTool.binding)
            .join(Source, Source.id == SourceTool.source_id)
            .where(Source.name == source)
        ).all()
    return {name: binding for name, binding in rows}


def store(gw: TestClient, source: str, tool: str, binding: Any) -> None:
    """Write ``binding`` as the tool's stored JSON, as an older version (or a mishap) did."""
    with services_of(gw).engine.begin() as connection:
        source_id = connection.execute(select(Source.id).where(Source.name == source)).scalar()
        connection.execute(
            update(SourceTool)
            .where(SourceTool.source_id == source_id, SourceTool.name == tool)
            .values(binding=binding)
        )


def test_a_sync_stores_the_json_it_always_stored(gw: TestClient, echo: EchoUpstream) -> None:
    register(gw, echo)
    found = stored(gw, "echo")
    for name, binding in as_stored_before(echo).items():
        assert found[name] == binding, name


def test_bindings_stored_before_are_called_as_before(gw: TestClient, echo: EchoUpstream) -> None:
    register(gw, echo)
    for name, binding in as_stored_before(echo).items():
        store(gw, "echo", name, binding)
    echoed = call(gw, "echo_get", {"q": "a b", "X-Note": "n1", "session": "s 1"})
    assert echoed["ok"], echoed
    body = echoed["result"]["body"]
    assert body["path"] == f"{BASE}/echo?q=a+b" and body["headers"]["X-Note"] == "n1"
    assert body["cookies"] == "session=s%201"
    posted = call(gw, "echo_post", {"text": "hello"})
    assert posted["ok"] and posted["result"]["body"]["method"] == "POST", posted
    assert json.loads(posted["result"]["body"]["body"]) == {"text": "hello"}
    nested = call(gw, "get_nested_file", {"folder": "docs", "file_id": "a.txt"})
    assert nested["result"]["body"]["path"] == f"{BASE}/files/docs/a.txt", nested


def test_an_mcp_binding_stored_before_is_called_as_before(
    gw: TestClient, hostile: HostileMcp
) -> None:
    add(gw, f"{hostile.url}/mcp")
    assert stored(gw, "hostile")["sleep"] == {"kind": "mcp", "tool": "sleep", "safe": False}
    store(gw, "hostile", "sleep", {"kind": "mcp", "tool": "sleep", "safe": False})
    answer = call(gw, "sleep", {"seconds": 0})
    assert answer["ok"] and answer["result"]["content"][0]["text"] == "slept 0", answer


UNREADABLE: dict[str, Any] = {
    "empty": {},
    "not an object": ["http"],
    "an mcp binding with no tool": {"kind": "mcp", "safe": True},
    "a parameter with no name": {
        "kind": "http", "method": "GET", "server": "http://127.0.0.1:9", "path": "/echo",
        "safe": True, "params": [{"arg": "q", "in": "query"}], "body": None,
    },
    "safe as a word": {
        "kind": "http", "method": "GET", "server": "http://127.0.0.1:9", "path": "/echo",
        "safe": "yes", "params": [], "body": None,
    },
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(UNREADABLE))
def test_a_stored_binding_that_does_not_fit_is_not_callable_by_name(
    gw: TestClient, echo: EchoUpstream, name: str
) -> None:
    """Before: `internal` (a KeyError in the gateway), or `not_callable` "no base URL to call
    None None", naming neither the tool nor the binding."""
    register(gw, echo)
    store(gw, "echo", "echo_get", UNREADABLE[name])
    sent = len(echo.requests)
    answer = call(gw, "echo_get", {"q": "x"})
    error = answer["error"]
    assert answer["ok"] is False and error["code"] == "not_callable", answer
    assert "the stored binding of 'echo_get' cannot be read" in error["message"]
    assert error["details"]["source"] == "echo" and error["retryable"] is False
    assert "toolreach source sync echo --force" in error["suggestion"]
    assert answer["attempts"] == 0 and len(echo.requests) == sent  # nothing was sent
    assert call(gw, "echo_post", {"text": "t"})["ok"]  # the source's other tools are fine


def test_a_forced_sync_writes_an_unreadable_binding_again(
    gw: TestClient, echo: EchoUpstream
) -> None:
    register(gw, echo)
    store(gw, "echo", "echo_get", {"kind": "mcp"})
    assert call(gw, "echo_get", {"q": "x"})["error"]["code"] == "not_callable"
    synced = gw.post("/v1/sources/echo/sync", params={"force": "true"}, headers=ADMIN)
    assert synced.status_code == 200 and synced.json()["unchanged"] > 0, synced.text
    assert stored(gw, "echo")["echo_get"] == as_stored_before(echo)["echo_get"]
    assert call(gw, "echo_get", {"q": "x"})["ok"]
