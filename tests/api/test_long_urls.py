"""A URL over TOOLREACH_MAX_URL_BYTES is a 414 in the error shape: from the app under any
server, and from the HTTP parser under `toolreach serve`'s uvicorn (a raw socket: HTTP
clients refuse to send such URLs), where a 100 KB URL was a plain-text 400."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from fastapi.testclient import TestClient

from app.api.parser_limits import protocol_class
from app.capacity.connections import server_options
from app.embedding.encoders import make_encoder
from app.main import create_app
from tests.conftest import AGENT, make_settings

LIMIT = 8192


def assert_shaped(status_line: bytes, headers: bytes, body: bytes, status: int, code: str) -> None:
    assert status_line.split(b" ")[1] == str(status).encode(), status_line
    assert b"content-type: application/json" in headers.lower(), headers
    answer = json.loads(body)
    assert set(answer) == {"error"} and set(answer["error"]) == {"code", "message", "details"}
    assert answer["error"]["code"] == code


def test_the_app_refuses_a_url_over_the_limit(client: TestClient) -> None:
    long_text = "a" * LIMIT
    response = client.get("/v1/tools", params={"text": long_text}, headers=AGENT)
    assert response.status_code == 414, response.text
    assert response.json()["error"]["code"] == "uri_too_long"
    # Under the limit, the request goes on to its route.
    under = client.get("/v1/tools", params={"text": "a" * 200}, headers=AGENT)
    assert under.status_code == 200, under.text


@pytest.fixture(scope="module")
def served(sqlite_url: str) -> Iterator[int]:
    """The app under uvicorn with `toolreach serve`'s protocol (the URL limit's under the
    connection bounds', app/capacity/connections.py), on a free port."""
    app = create_app(make_settings(sqlite_url, agent_keys=()), encoder=make_encoder("fake"))
    options = server_options(
        header_timeout=10, keepalive_timeout=5, max_connections=100, base=protocol_class(LIMIT)
    )
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", **options)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def raw_request(port: int, target: bytes, *, chunk: int = 65536) -> tuple[bytes, bytes, bytes]:
    """Send ``GET target`` in pieces of ``chunk`` bytes; the answer's status line, headers,
    body."""
    request = b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        for start in range(0, len(request), chunk):
            if select.select([sock], [], [], 0)[0]:
                break  # the server answered before the whole request: stop sending
            try:
                sock.sendall(request[start : start + chunk])
            except (BrokenPipeError, ConnectionResetError):
                break
        try:
            while data := sock.recv(65536):
                answer += data
        except ConnectionResetError:  # it closed with our unread bytes: a reset after
            pass
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, _, headers = head.partition(b"\r\n")
    return status_line, headers, body


@pytest.mark.parametrize("size", [LIMIT + 1, 20_000, 100_000, 1_000_000])
@pytest.mark.parametrize("chunk", [1024, 65536])
def test_the_server_refuses_a_long_url_in_the_error_shape(
    served: int, size: int, chunk: int
) -> None:
    target = b"/v1/tools?text=" + b"a" * (size - len(b"/v1/tools?text="))
    status_line, headers, body = raw_request(served, target, chunk=chunk)
    assert_shaped(status_line, headers, body, 414, "uri_too_long")


def test_a_url_at_the_limit_reaches_the_app(served: int) -> None:
    target = b"/v1/tools?text=" + b"a" * (LIMIT - len(b"/v1/tools?text="))
    status_line, headers, body = raw_request(served, target)
    assert_shaped(status_line, headers, body, 422, "invalid_input")  # text: at most 200


def test_a_request_the_parser_cannot_read_is_a_400_in_the_error_shape(served: int) -> None:
    status_line, headers, body = raw_request(served, b"/v1/tools bad\x00target")
    assert_shaped(status_line, headers, body, 400, "bad_request")


def test_serve_runs_uvicorn_with_the_shaped_protocol(
    env: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.api.parser_limits import ShapedHttpToolsProtocol
    from app.cli.main import main
    from tests.api.test_cli import free_port

    seen: dict[str, object] = {}
    monkeypatch.setenv("TOOLREACH_MAX_URL_BYTES", "4096")
    monkeypatch.setattr(uvicorn, "run", lambda *a, **kw: seen.update(kw))
    assert main(["serve", "--port", free_port()]) == 0
    protocol = seen["http"]
    assert isinstance(protocol, type) and issubclass(protocol, ShapedHttpToolsProtocol)
    assert protocol.max_url_bytes == 4096
