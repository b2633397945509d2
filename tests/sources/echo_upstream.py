"""A hostile HTTP upstream for the gateway tests: it answers every request with what it
received (the raw path and query, the headers, the cookies, the body, Basic credentials
decoded), under a base path (``/api/v1``) so a request that climbs above its operation shows.

Its OpenAPI document puts an argument in every place a request has one (path, query,
header, cookie, JSON body), and adds operations that answer a chosen status, answer late (a
second, or as long as asked), answer JSON nested as deep as asked, answer the echo as text
(JSON-escaped) or in an encoding (``ENCODINGS``), or redirect within the origin.
"""

from __future__ import annotations

import base64
import json
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

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
            "/encoded/{how}": {
                "get": _op(
                    "echo_encoded",
                    "Echo the request in an encoding (ENCODINGS)",
                    _string("how", "path", required=True),
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


def _b64(text: str, skip: int = 0, urlsafe: bool = False) -> str:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return encode(("x" * skip + text).encode()).decode()


def _headers(echoed: dict[str, Any]) -> str:
    return "\r\n".join(f"{k}: {v}" for k, v in echoed["headers"].items())


# How /encoded/{how} writes the echo (as JSON text, or the request's headers as lines).
ENCODINGS: dict[str, Callable[[str, dict[str, Any]], Any]] = {
    "upper": lambda text, _: text.upper(),
    "lower": lambda text, _: text.lower(),
    "hex": lambda text, _: text.encode().hex(),
    "HEX": lambda text, _: text.encode().hex().upper(),
    "base64": lambda text, _: _b64(text),
    "base64-offset-1": lambda text, _: _b64(text, 1),
    "base64-offset-2": lambda text, _: _b64(text, 2),
    "base64url-offset-1": lambda text, _: _b64(text, 1, urlsafe=True),
    "headers-base64": lambda _, echoed: _b64(_headers(echoed)),
    "headers-base64-offset-2": lambda _, echoed: "v1:" + _b64(_headers(echoed), 2),
    "headers-hex": lambda _, echoed: _headers(echoed).encode().hex(),
    "mime": lambda text, _: "\n".join(textwrap.wrap(_b64(text), 76)),
    "percent-every-byte": lambda text, _: "".join(f"%{b:02X}" for b in text.encode()),
    "percent-twice": lambda text, _: quote(quote(text, safe=""), safe=""),
    "unicode-escapes": lambda text, _: "".join(f"\\u{ord(c):04X}" for c in text),
    "html-entities": lambda text, _: "".join(f"&#{ord(c)};" for c in text),
    "base64-of-hex": lambda text, _: _b64(text.encode().hex()),
    "split": lambda text, _: [text[i : i + 5] for i in range(0, len(text), 5)],
    "characters": lambda text, _: list(text),
}


def encoded(how: str, echoed: dict[str, Any]) -> Any:
    return ENCODINGS[how](json.dumps(echoed, ensure_ascii=False), echoed)


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
                if path.startswith(f"{BASE}/encoded/"):
                    how = path.rsplit("/", 1)[1]
                    raw = json.dumps({"how": how, "value": encoded(how, echoed)}).encode()
                    return self._answer(200, raw, "application/json")
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
