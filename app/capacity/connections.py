"""The server's connections, bounded: a header timeout, an idle timeout, a connection cap.

uvicorn closes a kept-alive connection that stays idle after an answer
(``timeout_keep_alive``), but it waits for ever for a request's headers: a connection that
opens and sends nothing, or sends its headers a byte at a time, is held open as long as the
client likes, and a few thousand of them hold the process's sockets and memory. Here the
httptools protocol arms a timer when a connection opens and after each answer, and clears it
when a request's headers are complete: a connection still without them after
``header_timeout`` seconds is closed (with a 408 if it had sent part of a request). Past
``max_connections`` open connections, a new one is answered 503 with ``Retry-After`` in the
one error shape and closed at once, before it is read.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("toolreach.connections")


def error_answer(status: int, reason: str, code: str, message: str, retry: bool) -> bytes:
    """A whole HTTP/1.1 answer in the one error shape that closes the connection."""
    body = json.dumps({"error": {"code": code, "message": message, "details": None}}).encode()
    head = [
        f"HTTP/1.1 {status} {reason}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
        *(["retry-after: 1"] if retry else []),
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


TOO_MANY = error_answer(
    503, "Service Unavailable", "overloaded", "too many connections; retry shortly", retry=True
)
TOO_SLOW = error_answer(
    408, "Request Timeout", "request_timeout", "the request's headers came too slowly", False
)


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header timeout and a connection cap."""

    header_timeout: float = 10.0
    max_connections: int = 1000

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._header_timer: asyncio.TimerHandle | None = None
        self._partial = False  # bytes of a request whose headers are not complete yet
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            log.warning("refused a connection: %d are open already", self.max_connections)
            transport.write(TOO_MANY)
            transport.close()
            return
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request at work (its headers were complete): not this timer's
        if not self.transport.is_closing():
            if self._partial:
                self.transport.write(TOO_SLOW)
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        self._partial = self._partial or self._header_timer is not None
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self._disarm()
        self._partial = False
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        idle = self.cycle is None or self.cycle.response_complete  # no pipelined request
        if idle and not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def guarded_protocol(
    header_timeout: float,
    max_connections: int,
    base: type[HttpToolsProtocol] = HttpToolsProtocol,
) -> type[HttpToolsProtocol]:
    """The protocol class with these bounds (uvicorn builds one per connection), on top of
    ``base`` (another subclass of the httptools protocol, e.g. the URL limit's)."""
    bounds = {"header_timeout": header_timeout, "max_connections": max_connections}
    bases: tuple[type, ...] = (GuardedHttpToolsProtocol,)
    if base is not HttpToolsProtocol:
        bases += (base,)
    return type("GuardedHttpToolsProtocol", bases, bounds)


def server_options(
    *,
    header_timeout: float,
    keepalive_timeout: int,
    max_connections: int,
    base: type[HttpToolsProtocol] = HttpToolsProtocol,
) -> dict[str, Any]:
    """uvicorn's options for these bounds: ``uvicorn.run(app, **server_options(...))``."""
    return {
        "http": guarded_protocol(header_timeout, max_connections, base),
        "timeout_keep_alive": keepalive_timeout,
    }
