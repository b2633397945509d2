"""The client's tests run against the real service: ``python -m app.cli serve`` from this
repository on a free port, a temporary SQLite file, the fake encoder and the demo catalog."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from toolreach_client import Stats, ToolReach

REPO = Path(__file__).resolve().parents[2]
# The repository whose service the tests start: this one, or (to try a branch's server)
# another checkout.
SERVER_REPO = Path(os.environ.get("TOOLREACH_CLIENT_TEST_SERVER", REPO))
ADMIN_KEY = "client-test-admin-key-0123"
AGENT_KEY = "client-test-agent-key-0123"
# The demo catalog's cards, without their namespace: each test puts them in its own.
DEMO = [
    {k: v for k, v in card.items() if k != "namespace"}
    for card in json.loads((REPO / "app" / "demo" / "catalog.json").read_text(encoding="utf-8"))
]


@dataclass(frozen=True)
class Service:
    url: str
    log: Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the service stopped:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the service did not get ready:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """One real ToolReach for the session (the demo catalog in ``default``)."""
    home = tmp_path_factory.mktemp("service")  # its cwd: no stray .env is read
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(SERVER_REPO),
        "HF_HUB_OFFLINE": "1",
        "TOOLREACH_DATABASE_URL": f"sqlite:///{home / 'toolreach.db'}",
        "TOOLREACH_ENCODER": "fake",
        "TOOLREACH_ADMIN_KEYS": ADMIN_KEY,
        "TOOLREACH_AGENT_KEYS": AGENT_KEY,
        "TOOLREACH_LOAD_DEMO": "true",
        # as `make run` (toolreach init-local): sources on this machine, the demo server's
        "TOOLREACH_OUTBOUND_ALLOWED_NETWORKS": "127.0.0.0/8,::1/128",
        "TOOLREACH_EVENT_FLUSH_SECONDS": "0.1",
        "TOOLREACH_LOG_LEVEL": "warning",
    }
    log = home / "service.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
            cwd=home,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, process, log)
        yield Service(url, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def admin(service: Service) -> Iterator[ToolReach]:
    with ToolReach(service.url, api_key=ADMIN_KEY) as client:
        yield client


@pytest.fixture
def namespace(admin: ToolReach) -> str:
    """A fresh namespace holding the demo catalog, so each test counts its own stats."""
    name = f"t{uuid.uuid4().hex[:10]}"
    result = admin.tools.bulk(DEMO, namespace=name)
    assert len(result.created) == len(DEMO)
    return name


@pytest.fixture
def agent(service: Service, namespace: str) -> Iterator[ToolReach]:
    with ToolReach(service.url, api_key=AGENT_KEY, namespace=namespace) as client:
        yield client


def settled_stats(admin: ToolReach, namespace: str, routes: int, feedback: int) -> Stats:
    """The namespace's stats once route events are written (in the background, in batches)."""
    deadline = time.monotonic() + 10
    while True:
        stats = admin.stats(namespace=namespace)
        if (stats.routes, stats.feedback) == (routes, feedback) or time.monotonic() > deadline:
            return stats
        time.sleep(0.1)
