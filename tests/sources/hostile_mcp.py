"""A misbehaving MCP server over streamable HTTP, written by hand (JSON-RPC on a plain HTTP
server) so each misbehaviour is exact. Each endpoint is one server:

- ``/mcp``: well-behaved tools that answer late (``sleep``), answer a chosen number of
  bytes (``big``), refuse their arguments with JSON-RPC's ``-32602`` (``picky``), fail
  (``crash``, ``-32603``) or answer JSON nested as deep as asked (``deep``);
- ``/flood``: a stateful session whose GET stream sends ``notifications/tools/list_changed``
  every few milliseconds, for as long as it is open;
- ``/huge-list``: ``tools/list`` of ``PAGES`` pages of ``PAGE_TOOLS`` tools each (a test
  may have it fail past ``last_page``, so a client without bounds fails fast too).

It counts what it was asked (``lists``, ``pages``, ``calls``), so a test can tell how much
work a client did.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PAGES = 100
PAGE_TOOLS = 5000
FLOOD_EVERY = 0.005  # seconds between two list_changed notifications on /flood
ANY_OBJECT = {"type": "object"}


def _tool(name: str, description: str, **properties: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {k: {"type": v} for k, v in properties.items()}}
    return {"name": name, "description": description, "inputSchema": schema}


TOOLS = [
    _tool("sleep", "Answer after the given number of seconds.", seconds="number"),
    _tool("big", "Answer with the given number of bytes of text.", size="integer"),
    _tool("picky", "Refuse every call as invalid parameters.", value="string"),
    _tool("crash", "Fail every call with an internal error."),
    _tool("deep", "Answer structured content nested this many levels deep.", levels="integer"),
]


def page(cursor: int) -> dict[str, Any]:
    """One page of /huge-list's tools/list."""
    tools = [
        {
            "name": f"t{cursor}_{i}",
            "description": "A tool of a huge listing.",
            "inputSchema": ANY_OBJECT,
        }
        for i in range(PAGE_TOOLS)
    ]
    following = {"nextCursor": str(cursor + 1)} if cursor + 1 < PAGES else {}
    return {"tools": tools, **following}


class HostileMcp:
    def __init__(self) -> None:
        self.lists: Counter[str] = Counter()  # tools/list requests, by endpoint
        self.pages = 0  # pages of /huge-list served
        self.last_page = PAGES  # /huge-list refuses to serve more pages than this
        self.calls: Counter[str] = Counter()  # tools/call, by tool
        self.notified = 0  # list_changed notifications sent on /flood
        self.server = _Server(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def _result(self, endpoint: str, method: str, params: dict[str, Any]) -> Any:
        if method == "initialize":
            return {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
        if method == "tools/list":
            self.lists[endpoint] += 1
            if endpoint == "/huge-list":
                if self.pages >= self.last_page:
                    raise RpcError(-32603, f"this server stops after {self.last_page} pages")
                self.pages += 1
                return page(int(params.get("cursor") or 0))
            return {"tools": TOOLS}
        if method == "tools/call":
            return self._call(str(params.get("name")), params.get("arguments") or {})
        return {}

    def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        self.calls[name] += 1
        if name == "sleep":
            time.sleep(float(arguments.get("seconds", 0)))
            return {"content": [{"type": "text", "text": f"slept {arguments.get('seconds')}"}]}
        if name == "big":
            return {"content": [{"type": "text", "text": "x" * int(arguments.get("size", 0))}]}
        if name == "deep":
            return Deep(int(arguments.get("levels", 0)))
        if name == "picky":
            raise RpcError(-32602, f"Invalid params: value {arguments.get('value')!r} refused")
        raise RpcError(-32603, "Internal error: the tool crashed")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        mcp = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, raw: bytes, **headers: str) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(raw)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(raw)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    message = json.loads(self.rfile.read(length))
                except ValueError:
                    return self._send(400, b"")
                if "id" not in message:  # a notification (initialized, cancelled)
                    return self._send(202, b"")
                method, params = message.get("method", ""), message.get("params") or {}
                try:
                    reply = {"result": mcp._result(self.path, method, params)}
                except RpcError as exc:
                    reply = {"error": {"code": exc.code, "message": exc.message}}
                result = reply.get("result")
                if isinstance(result, Deep):  # written by hand: json.dumps would recurse
                    raw = result.message(message["id"])
                else:
                    raw = json.dumps({"jsonrpc": "2.0", "id": message["id"], **reply}).encode()
                session = {"Mcp-Session-Id": "flood-1"} if self.path == "/flood" else {}
                self._send(200, raw, **{"Content-Type": "application/json", **session})

            def do_GET(self) -> None:
                if self.path != "/flood":
                    return self._send(405, b"")
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
                event = f"event: message\ndata: {json.dumps(note)}\n\n".encode()
                try:
                    while True:
                        self.wfile.write(event)
                        self.wfile.flush()
                        mcp.notified += 1
                        time.sleep(FLOOD_EVERY)
                except OSError:
                    return None

            def do_DELETE(self) -> None:
                self._send(200, b"")

        return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up mid-answer (a timeout, a refused answer) is expected


class Deep:
    """A ``tools/call`` result whose ``structuredContent`` is ``levels`` deep."""

    def __init__(self, levels: int) -> None:
        self.levels = levels

    def message(self, request_id: Any) -> bytes:
        inner = '{"a": [' * (self.levels // 2) + '"bottom"' + "]}" * (self.levels // 2)
        result = '{"content": [{"type": "text", "text": "deep"}], "structuredContent": '
        head = f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "result": '
        return (head + result + '{"v": ' + inner + "}}}").encode()


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@contextmanager
def running() -> Iterator[HostileMcp]:
    server = HostileMcp()
    thread = threading.Thread(target=server.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()
