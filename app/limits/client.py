"""Who a request comes from, for the per-client limits: its address, proxies accounted for.

The socket's peer is the client, unless the peer is a proxy listed in ``trusted_proxies``
(``TOOLREACH_TRUSTED_PROXIES``). Then the client is read from ``X-Forwarded-For`` walking
from the right, past every trusted hop: the first address not trusted is the nearest one no
trusted proxy could vouch for, and therefore the one a proxy of ours saw connect. The hops
to its left were written by the client itself and may be anything, so a client can never
pick its own address (and dodge its limit) by sending the header. A peer that is not
trusted is taken as it is: its header is ignored.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from functools import lru_cache

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
UNKNOWN = "unknown"  # no peer (a test transport, a Unix socket): one shared subject


def networks(entries: Iterable[str]) -> tuple[Network, ...]:
    """``10.0.0.0/8``, ``172.28.0.10``, ``::1``… as networks; ValueError on a bad entry."""
    return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries)


@lru_cache(maxsize=65_536)
def _address(text: str) -> Address | None:
    """An address, with or without its port; None if it is none. Cached: the same few
    addresses come again and again, on every request."""
    text = text.strip()
    if text.startswith("[") and "]" in text:  # [v6]:port
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # v4:port
        text = text.split(":")[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _trusted(address: Address, trusted: Sequence[Network]) -> bool:
    return any(address in network for network in trusted)


def client_address(
    peer: str | None, forwarded_for: Sequence[str], trusted: Sequence[Network]
) -> str:
    """The client's address: ``peer`` itself, or, when ``peer`` is a trusted proxy, the
    right-most ``X-Forwarded-For`` hop that is not one (every header line, in order).

    A hop that is not an address (``unknown``, garbage) stops the walk: what lies left of
    it cannot be trusted, so the proxy that wrote it (the last trusted hop) is the client.
    """
    if peer is None:
        return UNKNOWN
    address = _address(peer)
    if address is None:
        return peer[:64]
    if not trusted or not _trusted(address, trusted):
        return subject(address)
    hops = [hop for line in forwarded_for for hop in line.split(",") if hop.strip()]
    client = address
    for hop in reversed(hops):
        parsed = _address(hop)
        if parsed is None:
            break
        client = parsed
        if not _trusted(parsed, trusted):
            break
    return subject(client)


@lru_cache(maxsize=65_536)
def subject(address: Address) -> str:
    """What a client is counted as: its IPv4 address, or its IPv6 address's /64 (one host
    commonly holds a whole /64, and could otherwise take a fresh address per guess)."""
    if isinstance(address, ipaddress.IPv4Address):
        return str(address)
    if address.ipv4_mapped is not None:  # ::ffff:1.2.3.4 is 1.2.3.4
        return str(address.ipv4_mapped)
    return str(ipaddress.ip_network(f"{address}/64", strict=False))
