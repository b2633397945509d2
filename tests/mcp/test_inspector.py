"""/mcp through the MCP Inspector's CLI mode (npm @modelcontextprotocol/inspector), run with the
machine's node against a real uvicorn. ``make install`` puts the Inspector in .npm-tools/."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import AGENT_KEY

INSPECTOR = Path(__file__).parents[2] / ".npm-tools" / "node_modules" / ".bin" / "mcp-inspector"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed: no MCP Inspector")


def inspector(url: str, *args: str) -> Any:
    """Run the Inspector CLI once; its JSON output."""
    assert INSPECTOR.exists(), f"{INSPECTOR} is missing: run `make install` (npm install)"
    command = [NODE or "node", str(INSPECTOR), "--cli", url, "--transport", "http"]
    command += ["--header", f"Authorization: Bearer {AGENT_KEY}", *args]
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_inspector_lists_the_meta_tools(server: str) -> None:
    listed = inspector(f"{server}/mcp", "--method", "tools/list")
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert list(tools) == ["search_tools", "describe_tool", "validate_call", "call_tool"]
    assert "queries" in tools["search_tools"]["inputSchema"]["properties"]


def test_inspector_calls_search_tools(server: str) -> None:
    called = inspector(
        f"{server}/mcp",
        "--method",
        "tools/call",
        "--tool-name",
        "search_tools",
        "--tool-arg",
        "query=weather in Paris",
        "k=2",
    )
    assert called.get("isError") is not True
    found = called["structuredContent"]["tools"]
    assert len(found) == 2 and found[0]["name"] == "get_weather"
    assert found[0]["inputSchema"]["required"] == ["city"]
    assert json.loads(called["content"][0]["text"]) == called["structuredContent"]


def test_inspector_validates_a_call_by_its_aliases(server: str) -> None:
    called = inspector(
        f"{server}/mcp/default",
        "--method",
        "tools/call",
        "--tool-name",
        "validate_call",
        "--tool-arg",
        "tool_name=get_wether",
        'parameters={"city": "Paris"}',
    )
    assert called["structuredContent"]["did_you_mean"][0] == "get_weather"


def test_the_docs_block_runs_as_written_without_a_terminal(server: str) -> None:
    """Issue 42 item 9: docs/MCP.md's `npx @modelcontextprotocol/inspector@1.0.3 --cli …`
    stopped without a terminal ("npx canceled due to missing packages"). Its block runs as
    written from the repository, stdin closed, against the running service."""
    page = (Path(__file__).parents[2] / "docs" / "MCP.md").read_text(encoding="utf-8")
    section = page[page.index("### Check it by hand") :]
    start = section.index("```bash\n") + len("```bash\n")
    block = section[start : section.index("```", start)]
    script = block.replace("http://localhost:8000", server)
    env = {**os.environ, "NO_COLOR": "1", "TOOLREACH_AGENT_KEY": AGENT_KEY}
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=Path(__file__).parents[2],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"search_tools"' in done.stdout and '"get_weather"' in done.stdout
