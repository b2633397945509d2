"""A small local HTTP upstream for the gateway tests, described by its own OpenAPI document,
with hostile paths: slow, a huge answer, a redirect elsewhere, failures, malformed MCP."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

HUGE_BYTES = 3 * 1024 * 1024


def document(port: int) -> dict[str, Any]:
    """The upstream's OpenAPI 3.0 document (its server is itself)."""

    def op(op_id: str, summary: str, **extra: Any) -> dict[str, Any]:
        return {
            "operationId": op_id,
            "summary": summary,
            "responses": {"200": {"description": "OK"}},
            **extra,
        }

    pet = {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1"},
        "servers": [{"url": f"http://127.0.0.1:{port}"}],
        "paths": {
            "/pets/{petId}": {
                "get": op(
                    "getPet",
                    "Get one pet by its id",
                    tags=["pets"],
                    parameters=[
                        {
                            "name": "petId",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        },
                        {"name": "verbose", "in": "query", "schema": {"type": "boolean"}},
                    ],
                    responses={
                        "200": {
                            "description": "The pet",
                            "content": {"application/json": {"schema": pet}},
                        },
                        "404": {"description": "No pet has this id"},
                        "5XX": {"description": "The pet store is down"},
                    },
                )
            },
            "/pets": {
                "post": op(
                    "createPet",
                    "Add a pet to the store",
                    requestBody={
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "name": {"type": "string"},
                                        "tag": {"type": "string"},
                                    },
                                    "required": ["name"],
                                }
                            }
                        },
                    },
                )
            },
            "/slow": {"get": op("slowThing", "Answers after three seconds")},
            "/huge": {"get": op("hugeThing", "Answers three megabytes")},
            "/away": {"get": op("redirectAway", "Redirects to another origin")},
            "/home": {"get": op("redirectHome", "Redirects within the origin")},
            "/flaky": {"get": op("flakyThing", "Fails twice with 503, then answers")},
            "/broken": {"get": op("brokenThing", "Always fails with 500")},
            "/broken-post": {
                "post": op("brokenPost", "Always fails with 500 (not safe to repeat)")
            },
            "/whoami": {"get": op("whoAmI", "Echoes the credentials the source sent")},
        },
    }


class Upstream:
    def __init__(self) -> None:
        self.flaky = 0
        self.hits: dict[str, int] = {}
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                raw = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                upstream.hits[url.path] = upstream.hits.get(url.path, 0) + 1
                if url.path == "/openapi.json":
                    return self._send(200, document(upstream.port))
                if url.path.startswith("/pets/"):
                    pet_id = url.path.rsplit("/", 1)[1]
                    if pet_id == "404":
                        return self._send(404, {"message": "no such pet"})
                    return self._send(
                        200, {"id": pet_id, "name": "Rex", "query": parse_qs(url.query)}
                    )
                if url.path == "/slow":
                    time.sleep(3)
                    return self._send(200, {"slow": True})
                if url.path == "/huge":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()  # no length: the gateway must count
                    chunk = b"x" * 65536
                    try:
                        for _ in range(HUGE_BYTES // len(chunk)):
                            self.wfile.write(chunk)
                    except OSError:
                        pass
                    return None
                if url.path == "/away":
                    return self._send(
                        302, {}, {"Location": "http://169.254.169.254/latest/meta-data"}
                    )
                if url.path == "/home":
                    return self._send(302, {}, {"Location": "/pets/7"})
                if url.path == "/flaky":
                    upstream.flaky += 1
                    if upstream.flaky % 3:
                        return self._send(503, {"message": "try again"})
                    return self._send(200, {"flaky": upstream.flaky})
                if url.path == "/broken":
                    return self._send(500, {"message": "broken"})
                if url.path == "/whoami":
                    return self._send(200, {"authorization": self.headers.get("Authorization")})
                return self._send(404, {"message": "not here"})

            def do_POST(self) -> None:
                url = urlsplit(self.path)
                upstream.hits[url.path] = upstream.hits.get(url.path, 0) + 1
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                if url.path == "/pets":
                    return self._send(201, {"created": json.loads(body)})
                if url.path == "/broken-post":
                    return self._send(500, {"message": "broken"})
                if url.path == "/mcp":  # a "MCP server" that answers malformed JSON-RPC
                    return self._send(200, b'{"jsonrpc": "2.0", "id": oops not json')
                if url.path == "/mcp-wrong":  # well-formed JSON, not JSON-RPC
                    return self._send(200, {"hello": "world"})
                return self._send(404, {"message": "not here"})

        return Handler


@contextmanager
def running() -> Iterator[Upstream]:
    upstream = Upstream()
    thread = threading.Thread(target=upstream.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield upstream
    finally:
        upstream.server.shutdown()
        upstream.server.server_close()
