"""Live MCP servers nobody here wrote (npm's server-everything and server-memory, run with
the machine's node) become sources; calls go through ToolReach to them."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from fastapi.testclient import TestClient

from tests.api.loop_support import services_of
from tests.conftest import ADMIN, AGENT
from tests.sources.conftest import EVERYTHING, MEMORY, PAGED, app_client, node
from tests.sources.upstream import Upstream


def add(client: TestClient, **body: object) -> dict:
    response = client.post("/v1/sources", json={"kind": "mcp", **body}, headers=ADMIN)
    assert response.status_code == 201, response.text
    return response.json()


def call(client: TestClient, name: str, arguments: dict, **extra: object) -> dict:
    response = client.post(
        "/v1/call", json={"name": name, "arguments": arguments, **extra}, headers=AGENT
    )
    assert response.status_code == 200, response.text
    return response.json()


def test_everything_over_streamable_http(gw: TestClient, everything_http: str) -> None:
    report = add(gw, name="everything", url=everything_http, prefix="ev.")
    assert report["tools"] >= 12 and report["refused"] == []
    card = gw.get("/v1/tools/ev.get-sum", headers=AGENT).json()
    assert card["source"] == {"name": "everything", "ref": "get-sum"}
    assert set(card["parameters"]["required"]) == {"a", "b"}
    route = gw.post("/v1/route", json={"query": "add two numbers: 2 and 3"}, headers=AGENT).json()
    names = [c["name"] for c in route["candidates"]]
    assert "ev.get-sum" in names
    answer = call(gw, "ev.get-sum", {"a": 2, "b": 3}, route_id=route["route_id"])
    assert answer["ok"], answer
    assert answer["result"]["content"][0]["text"] == "The sum of 2 and 3 is 5."
    echo = call(gw, "ev.echo", {"message": "hello"})
    assert echo["result"]["content"][0]["text"] == "Echo: hello"
    wrong = call(gw, "ev.get-sum", {"a": "two"})
    assert wrong["error"]["code"] == "invalid_arguments"
    services_of(gw).events.flush()
    stats = gw.get("/v1/stats", headers=ADMIN).json()
    assert stats["feedback"] == 1 and stats["rates"]["success_after_routing"] == 1.0
    again = gw.post("/v1/sources/everything/sync", headers=ADMIN).json()
    assert again["status"] == "unchanged" and again["created"] == again["updated"] == []


def test_everything_timeout_and_huge_answer(sqlite_db: str, everything_http: str) -> None:
    with app_client(sqlite_db, gateway_timeout_seconds=2, gateway_max_response_bytes=65536) as gw:
        add(gw, name="everything", url=everything_http)
        slow = call(gw, "trigger-long-running-operation", {"duration": 6, "steps": 2})
        assert slow["error"]["code"] == "timeout" and slow["latency_ms"] < 4000
        huge = call(gw, "echo", {"message": "x" * 100_000})
        assert huge["error"]["code"] == "response_too_large", huge["error"]["message"]
        fine = call(gw, "echo", {"message": "still here"})  # a new session is opened
        assert fine["ok"], fine


def test_stdio_servers_env_and_secrets(sqlite_db: str, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MEMORY_SECRET_FOR_TEST", "s3cret-value-for-the-test")
    with app_client(sqlite_db) as gw:
        add(
            gw,
            name="memory",
            command=[node(), str(MEMORY)],
            env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")},
        )
        entity = {"name": "Ada", "entityType": "person", "observations": ["wrote programs"]}
        created = call(gw, "create_entities", {"entities": [entity]})
        assert created["ok"], created
        graph = call(gw, "read_graph", {})
        assert "wrote programs" in json.dumps(graph["result"])
        add(
            gw,
            name="everything",
            command=[node(), str(EVERYTHING), "stdio"],
            env={"FROM_SECRET": {"env": "MEMORY_SECRET_FOR_TEST"}},
            prefix="ev.",
        )
        env = call(gw, "ev.get-env", {})
        text = json.dumps(env["result"])
        assert "FROM_SECRET" in text and "[secret]" in text  # passed to it, masked in answers
        assert "s3cret-value-for-the-test" not in text
        assert "TOOLREACH_" not in text  # the service's own environment is not inherited
        listed = gw.get("/v1/sources", headers=ADMIN).json()
        assert "s3cret" not in json.dumps(listed)


def test_stdio_is_off_by_default(sqlite_db: str) -> None:
    with app_client(sqlite_db, source_stdio_allowed=False) as gw:
        body = {"name": "x", "kind": "mcp", "command": ["node", "server.js"]}
        refused = gw.post("/v1/sources", json=body, headers=ADMIN)
        assert refused.status_code == 422 and "STDIO_ALLOWED" in refused.text


def test_malformed_json_rpc_upstream(sqlite_db: str, upstream: Upstream) -> None:
    with app_client(sqlite_db, gateway_timeout_seconds=2) as gw:
        for path in ("/mcp", "/mcp-wrong"):
            started = time.perf_counter()
            body = {"name": "bad", "kind": "mcp", "url": f"{upstream.url}{path}"}
            refused = gw.post("/v1/sources", json=body, headers=ADMIN)
            assert refused.status_code == 502, refused.text
            assert refused.json()["error"]["code"] == "source_failed"
            assert time.perf_counter() - started < 5
        assert gw.get("/v1/sources", headers=ADMIN).json()["total"] == 0


def paged(name: str, tools_file: Path) -> dict:
    return {
        "name": name,
        "command": [sys.executable, str(PAGED)],
        "env": {"TOOLS_FILE": str(tools_file)},
    }


def paged_tools(path: Path, names: list[str], description: str = "A tool.") -> None:
    tools = [
        {"name": n, "description": f"{description} ({n})", "inputSchema": {"type": "object"}}
        for n in names
    ]
    path.write_text(json.dumps(tools))


def test_resync_versions_and_retires(sqlite_db: str, tmp_path: Path) -> None:
    """Pagination, a changed tool (a new version), a removed one (retired, history kept),
    nothing changed (nothing written), a tool that comes back."""
    tools_file = tmp_path / "tools.json"
    paged_tools(tools_file, ["alpha", "beta", "gamma", "reload", "delta"])
    with app_client(sqlite_db) as gw:
        report = add(
            gw,
            name="paged",
            command=[sys.executable, str(PAGED)],
            env={"TOOLS_FILE": str(tools_file)},
        )
        assert report["tools"] == 5 and sorted(report["created"]) == [
            "alpha", "beta", "delta", "gamma", "reload",
        ]  # fmt: skip
        same = gw.post("/v1/sources/paged/sync", headers=ADMIN).json()
        assert same["status"] == "unchanged"
        paged_tools(tools_file, ["alpha", "gamma", "reload", "delta"])
        tools = json.loads(tools_file.read_text())
        tools[0]["description"] = "Alpha, described better."
        tools_file.write_text(json.dumps(tools))
        changed = gw.post("/v1/sources/paged/sync", headers=ADMIN).json()
        assert changed["status"] == "synced"
        assert changed["updated"] == ["alpha"] and changed["retired"] == ["beta"]
        assert changed["unchanged"] == 3 and changed["tools"] == 4
        assert gw.get("/v1/tools/beta", headers=AGENT).status_code == 404  # not routed
        old = gw.get("/v1/tools/beta?version=1", headers=AGENT).json()  # still readable
        assert old["deleted"] is True and old["source"]["name"] == "paged"
        assert gw.get("/v1/tools/alpha?version=2", headers=AGENT).json()["description"] == (
            "Alpha, described better."
        )
        gone = call(gw, "beta", {})
        assert gone["error"]["code"] == "unknown_tool"
        paged_tools(tools_file, ["alpha", "beta", "gamma", "reload", "delta"])
        back = gw.post("/v1/sources/paged/sync", headers=ADMIN).json()
        assert "beta" in back["created"] and back["retired"] == []
        source = gw.get("/v1/sources/paged", headers=ADMIN).json()
        assert source["tools"] == 5 and source["retired"] == 0
        assert gw.delete("/v1/sources/paged", headers=ADMIN).status_code == 204
        assert gw.get("/v1/tools", headers=AGENT).json()["total"] == 0


def test_list_changed_resyncs(sqlite_db: str, tmp_path: Path) -> None:
    tools_file = tmp_path / "tools.json"
    paged_tools(tools_file, ["alpha", "reload"])
    with app_client(sqlite_db) as gw:
        add(
            gw,
            name="paged",
            command=[sys.executable, str(PAGED)],
            env={"TOOLS_FILE": str(tools_file)},
        )
        paged_tools(tools_file, ["alpha", "reload", "epsilon"])
        assert call(gw, "reload", {})["ok"]  # the server re-reads its file, says list_changed
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if gw.get("/v1/tools/epsilon", headers=AGENT).status_code == 200:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("notifications/tools/list_changed did not re-sync the source")
        assert call(gw, "epsilon", {"x": 1})["ok"]


def test_name_taken_by_another_source_is_refused(gw: TestClient, tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    paged_tools(first, ["alpha"])
    paged_tools(second, ["alpha", "omega"])
    add(gw, name="one", command=[sys.executable, str(PAGED)], env={"TOOLS_FILE": str(first)})
    report = add(
        gw, name="two", command=[sys.executable, str(PAGED)], env={"TOOLS_FILE": str(second)}
    )
    assert report["created"] == ["omega"]
    assert report["refused"] == [
        {"name": "alpha", "reason": "the name is taken in the namespace by source 'one'"}
    ]
    assert gw.get("/v1/tools/alpha", headers=AGENT).json()["source"]["name"] == "one"


def test_a_command_given_as_one_string_is_split_as_the_cli_splits_it(
    gw: TestClient, tmp_path: Path
) -> None:
    """Issue 42 item 8: `"command": "node server.js"` was a 422 ("Input should be a valid
    list") though the CLI's --stdio takes that string; it is split as a shell would (quotes
    keep a path with a space whole) and stored as the argv list."""
    folder = tmp_path / "with space"
    folder.mkdir()
    tools = folder / "tools.json"
    paged_tools(tools, ["alpha"])
    command = f"{sys.executable} '{PAGED}'"
    report = add(gw, name="one", command=command, env={"TOOLS_FILE": str(tools)})
    assert report["created"] == ["alpha"]
    stored = gw.get("/v1/sources/one", headers=ADMIN).json()["config"]
    assert stored["command"] == [sys.executable, str(PAGED)]
    unclosed = gw.post(
        "/v1/sources",
        json={"name": "two", "kind": "mcp", "command": "node 'server.js"},
        headers=ADMIN,
    )
    assert unclosed.status_code == 422, unclosed.text
    assert "cannot be split into words" in unclosed.text
