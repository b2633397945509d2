"""Where the service may send a request on a source's behalf (docs/SOURCES.md, "Outbound").

1. A request goes only to its source's origins: the OpenAPI document's own (and the servers
   it declares, or the ``base_url`` it was registered with), the MCP server's URL. A redirect
   is followed only within the origin it came from; one elsewhere is refused.
2. Every TCP connection is checked as it is made, against every address the host name
   resolves to, and is then made to the address that was checked (a name that resolves
   elsewhere a moment later, DNS rebinding, cannot slip through). Refused unless a network
   of ``TOOLREACH_OUTBOUND_ALLOWED_NETWORKS`` holds the address:
   the addresses app/sources/addresses.py refuses (loopback, link-local, the clouds'
   metadata addresses, this host's own, ...) and the networks of
   ``TOOLREACH_OUTBOUND_DENIED_NETWORKS``.
3. No proxy from the environment: the check above must see the real destination.
4. Every forwarded request carries ``X-ToolReach-Hop``; the gateway refuses a call that
   carries it, so a source pointing back at this service cannot make it call itself.
5. An answer larger than ``TOOLREACH_GATEWAY_MAX_RESPONSE_BYTES`` is cut off, an error.

The check sits in the connection pool's network backend (httpcore for httpx, httpcore2 for
the MCP SDK's httpx2), below redirects, retries and the SDK: no request can get around it.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import httpx2

from app.settings import Settings
from app.sources.addresses import HOST, IPAddress, IPNetwork, refusal
from app.sources.causes import NameNotResolved

HOP_HEADER = "X-ToolReach-Hop"


class OutboundRefused(Exception):
    """A request the outbound rules do not allow; the message says which rule."""


TOO_LARGE = "the answer is larger than"


class ResponseTooLarge(httpx2.SSEError, httpx2.StreamError):
    """An upstream's answer is larger than the gateway accepts. It is one of httpx2's
    stream errors so the MCP SDK resolves the waiting request with an error (its message
    starts with ``TOO_LARGE``) instead of leaving it to its timeout."""


def _networks(values: Iterable[str]) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(v, strict=False) for v in values)


@dataclass(frozen=True)
class OutboundRules:
    allowed: tuple[IPNetwork, ...] = ()
    denied: tuple[IPNetwork, ...] = ()
    own: frozenset[IPAddress] = frozenset()
    max_response_bytes: int = 4 * 1_048_576

    @classmethod
    def from_settings(cls, settings: Settings) -> OutboundRules:
        return cls(
            allowed=_networks(settings.outbound_allowed_networks),
            denied=_networks(settings.outbound_denied_networks),
            max_response_bytes=settings.gateway.max_response_bytes,
        )

    def refusal(self, address: IPAddress) -> str | None:
        """Why a connection to ``address`` is refused, or None if it is allowed
        (app/sources/addresses.py)."""
        return refusal(address, self.allowed, self.denied, self.own | HOST.get())

    async def checked_address(self, host: str, port: int, *, unresolved_ok: bool = False) -> str:
        """The address to connect to for ``host``; OutboundRefused if any it resolves to
        is refused; NameNotResolved if it resolves to none (unless ``unresolved_ok``: then
        "": a name that does not resolve is unreachable, not refused)."""
        try:
            addresses = [ipaddress.ip_address(host.strip("[]").split("%")[0])]
        except ValueError:
            try:
                infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError as exc:
                if unresolved_ok:
                    return ""
                raise NameNotResolved(f"{host} ({exc})") from None
            addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
        if not addresses:
            raise NameNotResolved(f"{host} (no address)")
        for address in addresses:
            reason = self.refusal(address)
            if reason is not None:
                hint = "" if host == str(address) else f" ({host} resolves to {address})"
                raise OutboundRefused(
                    f"{address} is {reason}{hint}; allow it with "
                    "TOOLREACH_OUTBOUND_ALLOWED_NETWORKS if it is really meant"
                )
        return str(addresses[0])

    async def check_url(self, url: str, *, unresolved_ok: bool = False) -> None:
        """Refuse a URL that is not http(s), carries credentials, or is at a refused
        address, before anything is sent. ``unresolved_ok``: a name that does not resolve
        now passes (every connection is checked again as it is made)."""
        try:
            parsed = httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise OutboundRefused(f"{url[:200]!r} is not a URL: {exc}") from None
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise OutboundRefused(f"{url[:200]!r}: a source's URL must be http:// or https://")
        if parsed.userinfo:
            raise OutboundRefused("a source's URL may not hold credentials; use a reference")
        port = parsed.port or _default_port(parsed.scheme)
        await self.checked_address(parsed.host, port, unresolved_ok=unresolved_ok)


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


class GuardedBackend:
    """A connection pool's network backend that connects only where the rules allow."""

    def __init__(self, inner: Any, rules: OutboundRules) -> None:
        self._inner = inner
        self._rules = rules

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> Any:
        address = await self._rules.checked_address(host, port)
        return await self._inner.connect_tcp(
            address,
            port,
            timeout=timeout,
            local_address=local_address,
            socket_options=socket_options,
        )

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
        raise OutboundRefused("a source is reached over TCP, never a local socket")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def _guard(transport: Any, rules: OutboundRules) -> None:
    """Put the rules into the transport's connection pool (a private attribute of httpcore
    and httpcore2: checked here, so a library change fails loudly, never silently)."""
    pool = getattr(transport, "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend"):
        raise RuntimeError("the HTTP library changed: the outbound guard cannot be installed")
    pool._network_backend = GuardedBackend(pool._network_backend, rules)


class _CappedStream(httpx.AsyncByteStream, httpx2.AsyncByteStream):
    """A response body that stops, with ResponseTooLarge, past ``limit`` bytes."""

    def __init__(self, stream: Any, limit: int) -> None:
        self._stream = stream
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._stream:
            seen += len(chunk)
            if seen > self._limit:
                raise ResponseTooLarge(f"{TOO_LARGE} {self._limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


class _Refused(httpx.AsyncByteStream, httpx2.AsyncByteStream):
    """The body of an answer whose declared length is over ``limit``: ResponseTooLarge."""

    def __init__(self, limit: int) -> None:
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        raise ResponseTooLarge(f"{TOO_LARGE} {self._limit} bytes")
        yield b""  # an async generator, like every body stream


class _Capped(httpx.AsyncBaseTransport, httpx2.AsyncBaseTransport):
    """A transport whose answers are capped (the MCP SDK reads JSON answers whole)."""

    def __init__(self, inner: Any, limit: int, response_class: type) -> None:
        self._inner = inner
        self._limit = limit
        self._response_class = response_class

    async def handle_async_request(self, request: Any) -> Any:
        response = await self._inner.handle_async_request(request)
        length = response.headers.get("content-length", "")
        stream: Any = _CappedStream(response.stream, self._limit)
        if length.isdigit() and int(length) > self._limit:
            # Refused when read, not here: raised here, it would end the MCP SDK's whole
            # transport (every call on the session) instead of failing this answer's request.
            await response.aclose()
            stream = _Refused(self._limit)
        return self._response_class(
            status_code=response.status_code,
            headers=response.headers,
            stream=stream,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def http_client(
    rules: OutboundRules, *, timeout: float, headers: dict[str, str] | None = None
) -> httpx.AsyncClient:
    """An httpx client under the rules: guarded connections, no proxy, no redirects (the
    caller follows those within the origin), capped answers."""
    transport = httpx.AsyncHTTPTransport(trust_env=False)
    _guard(transport, rules)
    return httpx.AsyncClient(
        transport=_Capped(transport, rules.max_response_bytes, httpx.Response),
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
        headers={HOP_HEADER: "1", **(headers or {})},
    )


def mcp_http_client(
    rules: OutboundRules, *, timeout: float, headers: dict[str, str] | None = None
) -> httpx2.AsyncClient:
    """The same for the MCP SDK (httpx2), which follows redirects only within the origin."""
    transport = httpx2.AsyncHTTPTransport(trust_env=False)
    _guard(transport, rules)
    return httpx2.AsyncClient(
        transport=_Capped(transport, rules.max_response_bytes, httpx2.Response),
        timeout=httpx2.Timeout(timeout, read=max(timeout, 300.0)),
        follow_redirects=False,
        trust_env=False,
        headers={HOP_HEADER: "1", **(headers or {})},
    )


def same_origin(a: str, b: str) -> bool:
    first, second = httpx.URL(a), httpx.URL(b)
    return (first.scheme, first.host, first.port) == (second.scheme, second.host, second.port)
