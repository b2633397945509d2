"""Why a source could not be reached, read from the exception a library raised (issue 42
item 1): httpx and the MCP SDK's httpx2 wrap the operating system's error in their own, and
the SDK's transports raise them inside task groups, so the cause is found by walking the
chain (``__cause__``, ``__context__``) and the groups, looking for the first that names one.

| cause | what happened | retry? |
|---|---|---|
| ``refused`` | nothing listens at the address (a stopped server) | yes |
| ``reset`` | the connection was reset | yes |
| ``dns`` | the name does not resolve | yes |
| ``tls`` | the TLS handshake failed (a certificate not trusted, not TLS) | no: an operator's |
| ``timeout`` | no connection or no answer in time | yes |
| ``closed`` | the server closed the connection without (all of) an answer | yes |
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import anyio
import httpx
import httpx2
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED

Cause = Literal["refused", "reset", "dns", "tls", "timeout", "closed"]
MAX_CHAIN = 64  # exceptions looked at, at most


class NameNotResolved(Exception):
    """A source's host name resolves to no address (raised by the outbound check, which
    resolves every name before it connects: app/sources/outbound.py)."""


@dataclass(frozen=True)
class Unreached:
    """A failure to reach a source: its cause, and a sentence that names it."""

    cause: Cause
    reason: str

    @property
    def retryable(self) -> bool:
        return self.cause != "tls"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, the exceptions of its groups, its causes and contexts, depth first."""
    stack, seen = [exc], set[int]()
    while stack and len(seen) < MAX_CHAIN:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        following = [item.__context__, item.__cause__, *reversed(getattr(item, "exceptions", ()))]
        stack.extend(e for e in following if isinstance(e, BaseException))


def _tls(exc: ssl.SSLError) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS: the server's certificate is not trusted ({exc.verify_message})"
    return f"TLS: the handshake failed ({exc.reason or exc})"


_CLOSED = (
    httpx.RemoteProtocolError,
    httpx2.RemoteProtocolError,
    anyio.EndOfStream,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    EOFError,
)


def _named(exc: BaseException) -> Unreached | None:
    """The cause ``exc`` itself names, if it names one."""
    if isinstance(exc, NameNotResolved | socket.gaierror):
        return Unreached("dns", f"the name does not resolve: {exc}")
    if isinstance(exc, ssl.SSLError):
        return Unreached("tls", _tls(exc))
    if isinstance(exc, ConnectionRefusedError):
        return Unreached("refused", "the connection was refused: nothing listens there")
    if isinstance(exc, ConnectionResetError | BrokenPipeError | ConnectionAbortedError):
        return Unreached("reset", "the connection was reset by the server")
    if isinstance(exc, httpx.ConnectTimeout | httpx2.ConnectTimeout):
        return Unreached("timeout", "no connection in time")
    if isinstance(exc, httpx.TimeoutException | httpx2.TimeoutException | TimeoutError):
        return Unreached("timeout", "no answer in time")
    return None


def unreached(exc: BaseException) -> Unreached | None:
    """Why the source could not be reached, if ``exc`` says so; None if it is no failure to
    reach it. A named cause anywhere in the chain wins over a closed connection, which is
    what every transport says last."""
    chain = list(_chain(exc))
    for item in chain:
        found = _named(item)
        if found is not None:
            return found
    if any(isinstance(item, _CLOSED) for item in chain) or _says_closed(chain):
        return Unreached("closed", "the server closed the connection without an answer")
    return None


def _says_closed(chain: list[BaseException]) -> bool:
    """The MCP SDK's own word for a transport that ended (JSON-RPC CONNECTION_CLOSED)."""
    return any(isinstance(e, MCPError) and e.code == CONNECTION_CLOSED for e in chain)
