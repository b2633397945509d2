"""The gateway path out of the box: start demo_server.py (an MCP server of our own, on a free
local port), register it with ToolReach as a source in its own namespace, and take both away
again once the agent is done. The agent then routes there and calls every tool through
``POST /v1/call``, whose answer is also the step's report.

Needs an admin key (``TOOLREACH_ADMIN_KEY``: `make run` prints it and keeps it in .env) and a
service that may call this machine (`make run` allows it: TOOLREACH_OUTBOUND_ALLOWED_NETWORKS).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
SOURCE = NAMESPACE = "agent-demo"
# What a run leaves: a namespace keeps its history when its tools go (docs/API.md, Namespaces).
LEFT = (
    f"gateway_demo: source {SOURCE!r} removed, its tools retired; the run's routes and reports "
    f"stay in namespace {NAMESPACE!r}, listed with 0 tools until the next run: "
    f"{{url}}/dashboard?namespace={NAMESPACE}&range=all"
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(port: int) -> subprocess.Popen[bytes]:
    """demo_server.py on ``port`` (this Python: it needs the MCP SDK and uvicorn), once it
    answers; SystemExit with its output if it does not."""
    server = subprocess.Popen(
        [sys.executable, str(HERE / "demo_server.py"), "--port", str(port)],
        cwd=HERE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and server.poll() is None:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return server
        time.sleep(0.1)
    server.kill()
    output = server.communicate()[0].decode(errors="replace")[-2000:]
    raise SystemExit(f"gateway_demo: demo_server.py did not start:\n{output}")


def register(http: httpx.Client, port: int) -> None:
    """The demo server as source ``agent-demo`` (again, if a run before left it)."""
    http.delete(f"/v1/sources/{SOURCE}")
    body = {"name": SOURCE, "kind": "mcp", "url": f"http://127.0.0.1:{port}/mcp"}
    answer = http.post("/v1/sources", json={**body, "namespace": NAMESPACE})
    if answer.status_code == 502 and "outbound" in answer.text.lower():
        raise SystemExit(
            "gateway_demo: the service may not call this machine; start it with "
            "TOOLREACH_OUTBOUND_ALLOWED_NETWORKS=127.0.0.0/8,::1/128 (make run does)"
        )
    if answer.status_code != 201:
        raise SystemExit(f"gateway_demo: registering the demo server: {answer.text[:500]}")


@contextlib.asynccontextmanager
async def demo_source(env: Mapping[str, str] = os.environ) -> AsyncIterator[str]:
    """The namespace of the demo server's tools, registered for the time of the block."""
    key = env.get("TOOLREACH_ADMIN_KEY")
    if not key:
        raise SystemExit(
            "gateway_demo: set TOOLREACH_ADMIN_KEY to an admin key (make run prints it), "
            "to register the demo server as a source"
        )
    url = env.get("TOOLREACH_URL", "http://127.0.0.1:8000")
    port = free_port()
    server = start_server(port)
    headers = {"Authorization": f"Bearer {key}"}
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            register(http, port)
            try:
                yield NAMESPACE
            finally:
                http.delete(f"/v1/sources/{SOURCE}")  # its tools are retired
                print(LEFT.format(url=url))
    finally:
        server.terminate()
        server.wait(timeout=10)
