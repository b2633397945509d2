"""The server's connections, against a real uvicorn on a free port with the options
`toolreach serve` passes: a header timeout closes slow-header connections, idle kept-alive
ones are closed, and past the cap a new connection is refused with a 503 at once."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from app.capacity.connections import GuardedHttpToolsProtocol, server_options
from app.embedding.encoders import make_encoder
from app.main import create_app
from tests.api.own_postgres import free_port
from tests.conftest import make_settings


@contextmanager
def serving(database_url: str, *, header_timeout: float, keepalive: int, cap: int) -> Iterator[int]:
    """The app in a real uvicorn, in a thread of this process; yields its port."""
    app = create_app(make_settings(database_url), encoder=make_encoder("fake"))

    async def slow() -> dict[str, bool]:  # a request at work longer than the header timeout
        await asyncio.sleep(2)
        return {"ok": True}

    app.add_api_route("/slow", slow)
    options = server_options(
        header_timeout=header_timeout, keepalive_timeout=keepalive, max_connections=cap
    )
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", **options)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=60)


def opened(port: int, send: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    if send:
        sock.sendall(send)
    return sock


def read_until_closed(sock: socket.socket, deadline: float) -> bytes | None:
    """Everything the server sends until it closes; None if it is still open at ``deadline``."""
    received = b""
    while True:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            return None
        except ConnectionResetError:
            return received
        if not chunk:
            return received
        received += chunk


def healthy(port: int) -> int:
    return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30).status_code


@pytest.fixture
def database(sqlite_url: str) -> str:
    return sqlite_url


def test_slow_headers_are_closed_while_requests_go_on(database: str) -> None:
    with serving(database, header_timeout=1.0, keepalive=5, cap=1000) as port:
        start = time.monotonic()
        partial = [
            opened(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ") for _ in range(200)
        ]
        silent = [opened(port) for _ in range(20)]
        assert healthy(port) == 200  # a whole request meanwhile: answered
        deadline = start + 20  # generous: the timeout is 1 s, only a hang takes 20
        partial_answers = [read_until_closed(sock, deadline) for sock in partial]
        silent_answers = [read_until_closed(sock, deadline) for sock in silent]
        elapsed = time.monotonic() - start
        for sock in partial + silent:
            sock.close()
        assert all(a is not None for a in partial_answers + silent_answers), "left open"
        assert elapsed >= 0.9  # closed by the timer, not refused outright
        first = partial_answers[0]
        assert first is not None and first.startswith(b"HTTP/1.1 408 ")
        body = json.loads(first.split(b"\r\n\r\n", 1)[1])
        assert body["error"]["code"] == "request_timeout"
        assert silent_answers == [b""] * 20  # nothing sent: closed without an answer
        assert healthy(port) == 200


def test_a_slow_request_after_an_answer_is_closed_but_a_working_one_is_not(
    database: str,
) -> None:
    with serving(database, header_timeout=1.0, keepalive=30, cap=1000) as port:
        sock = opened(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.settimeout(30)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")
        time.sleep(0.3)
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # the next request, never finished
        answer = read_until_closed(sock, time.monotonic() + 20)
        sock.close()
        assert answer is not None and answer.startswith(b"HTTP/1.1 408 ")
        slow = httpx.get(f"http://127.0.0.1:{port}/slow", timeout=30)
        assert slow.status_code == 200 and slow.json() == {"ok": True}


def test_idle_connections_close_and_the_cap_refuses_the_one_past_it(database: str) -> None:
    with serving(database, header_timeout=60, keepalive=1, cap=20) as port:
        kept = opened(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = read_until_closed(kept, time.monotonic() + 20)  # idle after its answer
        kept.close()
        assert answer is not None and answer.startswith(b"HTTP/1.1 200 ")
        held = [opened(port) for _ in range(20)]
        time.sleep(0.2)
        refused = opened(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        reply = read_until_closed(refused, time.monotonic() + 20)
        refused.close()
        assert reply is not None and reply.startswith(b"HTTP/1.1 503 ")
        head, body = reply.split(b"\r\n\r\n", 1)
        assert b"retry-after: 1" in head.lower()
        assert json.loads(body)["error"]["code"] == "overloaded"
        for sock in held:
            sock.close()
        deadline = time.monotonic() + 20
        while healthy_or_refused(port) != 200:
            assert time.monotonic() < deadline, "the cap never freed up"
            time.sleep(0.05)


def healthy_or_refused(port: int) -> int:
    try:
        return healthy(port)
    except httpx.HTTPError:
        return 0


def test_serve_passes_the_bounds_to_uvicorn(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`toolreach serve` (and so the Dockerfile, compose and the Helm chart) runs with them."""
    from app.cli.main import main

    monkeypatch.setenv("TOOLREACH_SERVER_HEADER_TIMEOUT", "2.5")
    monkeypatch.setenv("TOOLREACH_SERVER_KEEPALIVE_TIMEOUT", "7")
    monkeypatch.setenv("TOOLREACH_SERVER_MAX_CONNECTIONS", "321")
    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda *a, **kw: seen.update(kw))
    assert main(["serve", "--port", str(free_port())]) == 0
    protocol = seen["http"]
    assert issubclass(protocol, GuardedHttpToolsProtocol)
    assert (protocol.header_timeout, protocol.max_connections) == (2.5, 321)
    assert seen["timeout_keep_alive"] == 7
