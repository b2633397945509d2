"""A hostile HTTP upstream for the gateway tests: it answers every request with what it
received (the raw path and query, the headers, the cookies, the body, Basic credentials
decoded), under a base path (``/api/v1``) so a request that climbs above its operation shows.

Its OpenAPI document puts an argument in every place a request has one (path, query,
header, cookie, JSON body), and adds operations that answer a chosen status, answer late (a
second, or as long as asked), answer JSON nested as deep as asked, answer the echo as text
(JSON-escaped), or redirect within the origin.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

BASE = "/api/v1"


def _string(name: str, where: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "in": where, "schema": {"type": "string"}, **extra}


def _op(op_id: str, summary: str, *params: dict[str, Any], **extra: Any) -> dict[str, Any]:
    responses = {"200": {"description": "What the upstream received"}}
    return {
        "operationId": op_id,
        "summary": summary,
        "parameters": list(params),
        "responses": responses,
        **extra,
    }


def document(port: int) -> dict[str, Any]:
    """The echo upstream's OpenAPI 3.0 document (its server is itself, under ``BASE``)."""
    body = {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"type": "object", "properties": {"text": {"type": "string"}}}
            }
        },
    }
    return {
        "openapi": "3.0.3",
        "info": {"title": "Echo", "version": "1"},
        "servers": [{"url": f"http://127.0.0.1:{port}{BASE}"}],
        "paths": {
            "/files/{file_id}": {
                "get": _op("get_file", "Read one file", _string("file_id", "path", required=True))
            },
            "/files/{folder}/{file_id}": {
                "get": _op(
                    "get_nested_file",
                    "Read one file of a folder",
                    _string("folder", "path", required=True),
                    _string("file_id", "path", required=True),
                )
            },
            "/echo": {
                "get": _op(
                    "echo_get",
                    "Echo the request",
                    _string("q", "query"),
                    _string("X-Note", "header"),
                    _string("session", "cookie"),
                ),
                "post": _op("echo_post", "Echo a posted body", requestBody=body),
            },
            "/text": {"get": _op("echo_text", "Echo the request as JSON-escaped text")},
            "/status/{code}": {
                "get": _op(
                    "answer_status",
                    "Answer this HTTP status",
                    _string("code", "path", required=True),
                )
            },
            "/slow": {"get": _op("answer_late", "Answer after a second", _string("q", "query"))},
            "/deep": {
                "get": _op(
                    "answer_deep",
                    "Answer JSON nested as many levels deep as asked, with this status",
                    _string("levels", "query", required=True),
                    _string("status", "query"),
                )
            },
            "/sleep": {
                "get": _op(
                    "answer_after",
                    "Answer after the seconds asked for",
                    _string("seconds", "query", required=True),
                    _string("q", "query"),
                )
            },
            "/hop": {"get": _op("redirect_home", "Redirect to /echo within the origin")},
            "/away": {"get": _op("redirect_away", "Redirect to the cloud metadata address")},
        },
    }


def nested(levels: int) -> str:
    """JSON ``levels`` deep (objects and lists in turn), written without recursion."""
    return '{"a": [' * (levels // 2) + '"bottom"' + "]}" * (levels // 2)


class EchoUpstream:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []  # every request received, as echoed
        self.server = _Server(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}"

    def received(self, part: str) -> list[dict[str, Any]]:
        """The requests whose raw path (query included) holds ``part``."""
        return [r for r in self.requests if part in r["path"]]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, raw: bytes, kind: str, **headers: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(raw)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(raw)

            def _echo(self) -> dict[str, Any]:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                auth = self.headers.get("Authorization", "")
                basic = None
                if auth.startswith("Basic "):
                    basic = base64.b64decode(auth[6:] + "==").decode("utf-8", "replace")
                cookies = self.headers.get("Cookie", "")
                echoed = {
                    "method": self.command,
                    "path": self.path,
                    "query": parse_qs(urlsplit(self.path).query),
                    "headers": dict(self.headers.items()),
                    "cookies": cookies,
                    "body": body,
                    "basic": basic,
                }
                upstream.requests.append(echoed)
                return echoed

            def _route(self) -> None:
                echoed = self._echo()
                path = urlsplit(self.path).path
                if path == f"{BASE}/openapi.json":
                    raw = json.dumps(document(upstream.port)).encode()
                    return self._answer(200, raw, "application/json")
                if path.startswith(f"{BASE}/status/"):
                    code = int(path.rsplit("/", 1)[1])
                    return self._answer(code, json.dumps(echoed).encode(), "application/json")
                if path == f"{BASE}/slow":
                    time.sleep(1.0)
                if path == f"{BASE}/deep":
                    query = echoed["query"]
                    status = int(query.get("status", ["200"])[0])
                    raw = nested(int(query["levels"][0])).encode()
                    return self._answer(status, raw, "application/json")
                if path == f"{BASE}/sleep":
                    time.sleep(float(echoed["query"]["seconds"][0]))
                if path == f"{BASE}/hop":
                    return self._answer(302, b"", "text/plain", Location=f"{BASE}/echo")
                if path == f"{BASE}/away":
                    away = "http://169.254.169.254/latest/meta-data"
                    return self._answer(302, b"", "text/plain", Location=away)
                if path == f"{BASE}/text":  # the echo as text: every string JSON-escaped
                    raw = json.dumps(echoed, ensure_ascii=True).encode()
                    return self._answer(200, raw, "text/plain")
                return self._answer(200, json.dumps(echoed).encode(), "application/json")

            do_GET = do_POST = do_PUT = do_DELETE = _route

        return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up mid-answer (a timeout) is expected


@contextmanager
def running() -> Iterator[EchoUpstream]:
    upstream = EchoUpstream()
    thread = threading.Thread(target=upstream.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield upstream
    finally:
        upstream.server.shutdown()
        upstream.server.server_close()
