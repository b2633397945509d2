"""API descriptions as they ship (issue 40): a few thousand files, servers that are templates,
that name no host, that sit on a path item or are relative; one operation that cannot be read
or called never sinks the others. And every real description in shared/data/openapi imports
as it is."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient

from app.cli.main import main
from app.sources import openapi
from app.sources.binding import stored
from app.sources.documents import (
    DocumentError,
    DocumentLimits,
    Documents,
    file_uri,
    load_documents,
    parse_document,
    read_file,
)
from tests.conftest import ADMIN, AGENT
from tests.shared_data import shared_file
from tests.sources.multifile import (
    SHIPPED_PATHS,
    SHIPPED_SERVERS,
    shipped_document,
    write_document,
)

OPTIONS = openapi.Options(namespace="default", source="shipped")


def add(client: TestClient, path: Path, **extra: object) -> tuple[int, dict[str, Any]]:
    body = {"name": "shipped", "kind": "openapi", "path": str(path), **extra}
    response = client.post("/v1/sources", json=body, headers=ADMIN)
    return response.status_code, response.json()


def bindings(converted: openapi.Converted) -> dict[str, dict[str, Any]]:
    """Each card's binding, as it is stored."""
    return {card.name: stored(binding) for card, binding in converted.cards}


def test_a_few_thousand_files_import_on_the_default_bounds(gw: TestClient, tmp_path: Path) -> None:
    """3,002 files, 2,075 operations: refused before by the default of 2,000 documents."""
    root = shipped_document(tmp_path)
    assert sum(1 for _ in tmp_path.rglob("*.y*ml")) == 3002
    assert DocumentLimits().max_documents >= 10_000
    started = time.perf_counter()
    status, report = add(gw, root)
    assert status == 201, report
    assert report["tools"] == 2075 and report["refused"] == []
    assert time.perf_counter() - started < DocumentLimits().seconds
    not_callable = [n for n in report["notes"] if ": imported; not callable: " in n]
    assert [n.split(":")[0] for n in not_callable] == [
        "POST /v2/agents/{uuid}/chat",
        "POST /v2/agents/{uuid}/completions",
        "GET /v2/health",
    ]


def test_servers_as_real_documents_write_them(tmp_path: Path) -> None:
    converted = openapi.convert(_small(tmp_path), OPTIONS)
    assert converted.refused == []
    served = {name: b.get("server") for name, b in bindings(converted).items()}
    assert served["things000_get"] == "https://nyc.api.things.example"  # root variables
    assert served["zone_status"] == "https://eu1.status.things.example:8443"  # the op's own
    assert served["uploads_list"] == "https://uploads.things.example"  # the path item's
    for name in ("agent_chat", "agent_completions", "health"):
        assert served[name] is None


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("agent_chat", "its server URL 'https://{agent_url}' has the variable {agent_url} with "
         "no default (The agent's own endpoint: its URL is the `url` field of GET"),
        ("agent_completions", "its server URL 'https://' names no host (The agent's own"),
        ("health", "its server URL '/health-api' is relative to where the document was read, "
         "a file, not a URL"),
    ],
)  # fmt: skip
def test_an_operation_the_gateway_cannot_call_says_why(
    tmp_path: Path, name: str, said: str
) -> None:
    converted = openapi.convert(_small(tmp_path), OPTIONS)
    card = next(c for c, _ in converted.cards if c.name == name)
    assert bindings(converted)[name]["not_callable"].startswith(said)
    last = card.description.split("\n\n")[-1]
    assert last.startswith(f"{openapi.NOT_CALLABLE}: {said}"), card.description
    assert card.summary and said not in card.summary  # what routing reads first is kept


def test_a_relative_server_is_read_from_where_the_document_was() -> None:
    paths = {"/v2/health": SHIPPED_PATHS["/v2/health"], "/v2/x": _op("x")}
    document = {"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": paths}
    document["servers"] = [{"url": "../api/{v}", "variables": {"v": {"default": "v3"}}}]
    root = "https://docs.things.example/specs/openapi.yaml"
    converted = openapi.convert(Documents(root, {root: document}), OPTIONS)
    served = {name: b["server"] for name, b in bindings(converted).items()}
    assert served == {
        "health": "https://docs.things.example/health-api",
        "x": "https://docs.things.example/api/v3",
    }


def test_the_first_usable_server_of_a_level_and_no_fallback_to_the_root() -> None:
    unusable = {"url": "https://{tenant}.things.example"}
    paths = {
        "/a": _op("a", servers=[unusable, {"url": "https://a.things.example"}]),
        "/b": _op("b", servers=[unusable]),  # not the root's: those are not its servers
        "/c": _op("c", servers=[{"url": "ftp://files.things.example"}, "not an object"]),
    }
    document = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": paths}
    document["servers"] = [{"url": "https://root.things.example"}]
    root = "file:///specs/openapi.json"
    served = bindings(openapi.convert(Documents(root, {root: document}), OPTIONS))
    assert served["a"]["server"] == "https://a.things.example"
    assert served["b"]["server"] is None and "{tenant}" in served["b"]["not_callable"]
    assert served["c"]["not_callable"] == (
        "its server URL 'ftp://files.things.example' names no host; "
        "its server is not a Server Object"
    )


def test_a_swagger_document_with_no_host_imports_uncallable() -> None:
    document = {"swagger": "2.0", "info": {"title": "t", "version": "1"}, "paths": {"/x": _op("x")}}
    root = "file:///specs/swagger.json"
    converted = openapi.convert(Documents(root, {root: document}), OPTIONS)
    assert bindings(converted)["x"]["not_callable"] == "the document names no host"
    with_base = openapi.Options(namespace="default", source="s", base_url="https://x.example")
    assert bindings(openapi.convert(Documents(root, {root: document}), with_base))["x"] == {
        "kind": "http", "method": "GET", "server": "https://x.example", "path": "/x",
        "safe": True, "params": [], "body": None,
    }  # fmt: skip


def test_one_unreadable_or_malformed_operation_never_sinks_the_document() -> None:
    paths: dict[str, Any] = {
        "/fine": _op("fine"),
        "/gone": {"$ref": "#/components/pathItems/gone"},
        "/half": {"get": {"$ref": "#/nowhere"}, "post": _op("half_post")["get"]},
        "/odd": {"get": {"operationId": "odd", "parameters": 5, "responses": {}}},
        "/odd2": {"get": {"operationId": "odd2", "responses": {"200": 7}, "tags": "x"}},
    }
    document = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": paths}
    document["servers"] = [{"url": "https://things.example"}]
    root = "file:///specs/openapi.json"
    converted = openapi.convert(Documents(root, {root: document}), OPTIONS)
    assert set(bindings(converted)) >= {"fine", "half_post"}
    refused = {r["operation"]: r["reason"] for r in converted.refused}
    assert "no node at #/components/pathItems/gone" in refused["/gone"]
    assert "no node at #/nowhere" in refused["GET /half"]
    assert converted.operations == len(converted.cards) + len(converted.refused)


def test_the_gateway_answers_a_card_with_no_server_by_naming_the_base_url(
    gw: TestClient, tmp_path: Path
) -> None:
    status, report = add(gw, write_document(tmp_path, 1, SHIPPED_PATHS, SHIPPED_SERVERS))
    assert status == 201, report
    card = gw.get("/v1/tools/agent_chat", headers=AGENT).json()
    assert openapi.NOT_CALLABLE in card["description"]
    answer = gw.post(
        "/v1/call", json={"name": "agent_chat", "arguments": {"uuid": "a1"}}, headers=AGENT
    )
    assert answer.status_code == 200, answer.text
    error = answer.json()["error"]
    assert error["code"] == "not_callable" and "no base URL" in error["message"]
    assert error["details"]["missing"] == "base_url"
    assert "{agent_url} with no default" in error["details"]["reason"]
    assert "base_url" in error["suggestion"]


def test_a_base_url_makes_every_operation_callable(gw: TestClient, tmp_path: Path) -> None:
    root = write_document(tmp_path, 1, SHIPPED_PATHS, SHIPPED_SERVERS)
    status, report = add(gw, root, base_url="http://127.0.0.1:9/agent")
    assert status == 201 and not [n for n in report["notes"] if "not callable" in n], report
    card = gw.get("/v1/tools/agent_chat", headers=AGENT).json()
    assert openapi.NOT_CALLABLE not in card["description"]


# Every real description in shared/data/openapi, as it ships: (cards, refused).
REAL = {
    "box-platform.openapi.json": (296, 0),
    "slack-web.swagger.json": (174, 0),
    "openai.openapi.json": (288, 0),
    "twilio-conversations-v1.json": (103, 0),
    "twilio-messaging-v1.json": (58, 0),
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_every_real_description_imports_as_shipped(name: str) -> None:
    path = shared_file("openapi", name)
    documents = anyio.run(load_documents, file_uri(path), read_file)
    converted = openapi.convert(documents, OPTIONS)
    cards, refused = REAL[name]
    assert (len(converted.cards), len(converted.refused)) == (cards, refused), converted.refused
    served = {b.server for _, b in converted.cards}
    assert None not in served and all(str(s).startswith("https://") for s in served), served
    assert json.dumps([stored(b) for _, b in converted.cards])  # bindings are JSON, as stored


def test_a_real_description_registers_whole(gw: TestClient) -> None:
    status, report = add(gw, shared_file("openapi", "twilio-messaging-v1.json"))
    assert status == 201 and report["tools"] == 58 and report["refused"] == [], report


def _small(tmp_path: Path) -> Documents:
    root = write_document(tmp_path, 1, SHIPPED_PATHS, SHIPPED_SERVERS)
    return anyio.run(load_documents, file_uri(root), read_file)


def _op(name: str, **extra: Any) -> dict[str, Any]:
    answer = {"200": {"description": "ok"}}
    return {"get": {"operationId": name, "responses": answer, **extra}}


def test_yaml_is_read_fast_and_an_alias_is_still_refused() -> None:
    """libyaml's loader reads a text with no ``*`` (no alias can be in it); the rest goes to
    the loader that refuses aliases."""
    plain = b"openapi: 3.0.3\nbase: &b {type: string}\nglob: '**/*.yaml'\n"
    assert parse_document(plain, "file:///a.yaml")["glob"] == "**/*.yaml"
    aliased = b"openapi: 3.0.3\nbase: &b {type: string}\nother: *b\n"
    with pytest.raises(DocumentError, match="YAML aliases"):
        parse_document(aliased, "file:///a.yaml")
    assert parse_document(b"openapi: 3.0.3\nx: &b 1\n", "file:///a.yaml") == {
        "openapi": "3.0.3",
        "x": 1,
    }


def test_the_cli_says_which_operations_it_cannot_call(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_document(tmp_path / "doc", 1, SHIPPED_PATHS, SHIPPED_SERVERS)
    monkeypatch.setenv("TOOLREACH_DATABASE_URL", f"sqlite:///{tmp_path}/cli.db")
    monkeypatch.setenv("TOOLREACH_ENCODER", "fake")
    assert main(["source", "add", "shipped", "--openapi", str(root)]) == 0
    said = capsys.readouterr()
    assert "shipped: synced, 14 tools (14 created" in said.out
    assert "  note: POST /v2/agents/{uuid}/chat: imported; not callable: its server" in said.err
