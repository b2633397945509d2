"""docs/MCP.md's Python snippet runs as written, with the pinned MCP SDK, against a real
server (the 1.x client it replaced, ``streamablehttp_client``, is an ImportError there)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import AGENT_KEY

MCP_MD = Path(__file__).resolve().parents[2] / "docs" / "MCP.md"


def snippet() -> str:
    section = MCP_MD.read_text(encoding="utf-8").split("### Python, with the MCP SDK", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "docs/MCP.md has no Python snippet"
    return found.group(1)


def test_the_snippet_runs_against_the_server(server: str) -> None:
    env = {**os.environ, "TOOLREACH_MCP_URL": f"{server}/mcp", "TOOLREACH_AGENT_KEY": AGENT_KEY}
    done = subprocess.run(
        [sys.executable, "-c", snippet()], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    listed, found, checked = done.stdout.strip().splitlines()
    assert listed == "['search_tools', 'describe_tool', 'validate_call', 'call_tool']"
    assert "get_weather" in found
    assert set(json.loads(checked)) == {"valid", "errors", "did_you_mean"}


def test_the_1x_client_name_is_gone_from_the_pinned_sdk() -> None:
    with pytest.raises(ImportError):
        from mcp.client.streamable_http import streamablehttp_client  # type: ignore[attr-defined]  # noqa: F401
