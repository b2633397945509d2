"""Fixtures of the sources and gateway tests: a local upstream, real MCP servers from npm,
and an app allowed to reach loopback (the secure default refuses it)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.embedding.encoders import make_encoder
from app.main import create_app
from tests.conftest import empty_database, make_settings
from tests.sources import echo_upstream, hostile_mcp
from tests.sources.upstream import Upstream, running

ROOT = Path(__file__).resolve().parents[2]
NPM = ROOT / ".npm-tools" / "node_modules" / "@modelcontextprotocol"
EVERYTHING = NPM / "server-everything" / "dist" / "index.js"
MEMORY = NPM / "server-memory" / "dist" / "index.js"
GITHUB = NPM / "server-github" / "dist" / "index.js"
FILESYSTEM = NPM / "server-filesystem" / "dist" / "index.js"
PAGED = ROOT / "tests" / "data" / "mcp" / "paged_server.py"
LOOPBACK = ("127.0.0.0/8",)


def node() -> str:
    """The machine's node, with the npm servers `make install` puts in .npm-tools."""
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not installed: the real MCP servers cannot run")
    assert all(p.is_file() for p in (EVERYTHING, MEMORY, GITHUB, FILESYSTEM)), (
        "the MCP servers from npm are missing: run `make install` (it fills .npm-tools)"
    )
    return found


def gateway_settings(url: str, **overrides: object) -> object:
    values: dict[str, object] = {
        "outbound_allowed_networks": LOOPBACK,
        "source_stdio_allowed": True,
        "source_sync_seconds": 0,
        "source_watch": False,
        "gateway_timeout_seconds": 5,
        "gateway_breaker_seconds": 60,
        **overrides,
    }
    return make_settings(url, **values)


@pytest.fixture
def sqlite_db(sqlite_url: str) -> str:
    empty_database(sqlite_url)
    return sqlite_url


def app_client(url: str, **overrides: object) -> TestClient:
    app = create_app(gateway_settings(url, **overrides), encoder=make_encoder("fake"))  # type: ignore[arg-type]
    return TestClient(app, raise_server_exceptions=False)


@pytest.fixture
def gw(sqlite_db: str) -> Iterator[TestClient]:
    with app_client(sqlite_db) as client:
        yield client


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with running() as server:
        yield server


@pytest.fixture(scope="module")
def echo() -> Iterator[echo_upstream.EchoUpstream]:
    with echo_upstream.running() as server:
        yield server


@pytest.fixture(scope="module")
def hostile() -> Iterator[hostile_mcp.HostileMcp]:
    with hostile_mcp.running() as server:
        yield server


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def everything_http() -> Iterator[str]:
    """server-everything over streamable HTTP on a free loopback port: its /mcp URL."""
    port = free_port()
    process = subprocess.Popen(
        [node(), str(EVERYTHING), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        else:
            pytest.fail("server-everything did not start")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)
