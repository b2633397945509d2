"""Which addresses a source may be at (the outbound rules, app/sources/outbound.py).

Refused, unless a network of ``TOOLREACH_OUTBOUND_ALLOWED_NETWORKS`` holds the address:

* loopback (127.0.0.0/8, ::1) and every address of this host's interfaces (not only what
  its name resolves to: a base URL at the machine's own address reaches the machine);
* link-local (169.254.0.0/16, where most clouds' metadata services answer, fe80::/10);
* the clouds' metadata and platform addresses outside those (``METADATA``: AWS's
  fd00:ec2::254, Alibaba's 100.100.100.200, Azure's 168.63.129.16, ...);
* unspecified, "this network" (0.0.0.0/8), multicast and reserved addresses;
* the networks of ``TOOLREACH_OUTBOUND_DENIED_NETWORKS``.

An IPv6 address that carries an IPv4 one is judged by it too: IPv4-mapped (::ffff:a.b.c.d,
the same connection), NAT64 (64:ff9b::/96), 6to4 (2002::/16) and Teredo.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time

import ifaddr

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# The clouds' instance metadata and platform services at addresses the general rules let
# through (169.254.169.254 and 169.254.0.23, Tencent's, are link-local: refused already).
METADATA: dict[str, str] = {
    "fd00:ec2::/64": "AWS instance metadata, DNS and time over IPv6",
    "fd20:ce::254/128": "Google Cloud metadata over IPv6",
    "fd00:c1::a9fe:a9fe/128": "Oracle Cloud metadata over IPv6",
    "100.100.100.200/32": "Alibaba Cloud metadata",
    "100.100.2.136/31": "Alibaba Cloud's internal DNS",
    "168.63.129.16/32": "Azure's platform address: WireServer, DNS, health probes",
    "192.0.0.192/32": "Oracle Cloud Classic metadata",
}
_METADATA = tuple((ipaddress.ip_network(net), about) for net, about in METADATA.items())
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")
OWN_REFRESH_SECONDS = 30.0


def _interface_addresses() -> set[IPAddress]:
    """Every address of every interface of this host (best effort)."""
    found: set[IPAddress] = set()
    try:
        adapters = ifaddr.get_adapters()
    except Exception:  # an interface list the library cannot read: the name's addresses
        return found
    for adapter in adapters:
        for ip in adapter.ips:
            text = ip.ip if isinstance(ip.ip, str) else ip.ip[0]
            try:
                found.add(ipaddress.ip_address(text.split("%")[0]))
            except ValueError:
                continue
    return found


def own_addresses() -> frozenset[IPAddress]:
    """This host's addresses: its interfaces' and what its name resolves to."""
    found = _interface_addresses()
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None)
    except OSError:
        infos = []
    found.update(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos)
    return frozenset(plain for address in found for plain in _forms(address))


class _HostAddresses:
    """This host's addresses, looked up again every ``OWN_REFRESH_SECONDS`` (an interface
    may come up, or get a new address, while the service runs)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at = -OWN_REFRESH_SECONDS
        self._addresses: frozenset[IPAddress] = frozenset()

    def get(self) -> frozenset[IPAddress]:
        with self._lock:
            if time.monotonic() - self._at >= OWN_REFRESH_SECONDS:
                self._addresses, self._at = own_addresses(), time.monotonic()
            return self._addresses


HOST = _HostAddresses()


def _forms(address: IPAddress) -> list[IPAddress]:
    """The address, and the IPv4 address an IPv6 one carries (IPv4-mapped
    ::ffff:169.254.169.254, NAT64 64:ff9b::a9fe:a9fe, 6to4, Teredo), if any."""
    if not isinstance(address, ipaddress.IPv6Address):
        return [address]
    if address.ipv4_mapped is not None:  # the same connection as to the IPv4 address
        return [address.ipv4_mapped]
    carried = [address.sixtofour, (address.teredo or (None, None))[1]]
    if any(address in network for network in _NAT64):
        carried.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return [address, *(v4 for v4 in carried if v4 is not None)]


NOT_A_SOURCE = ("is_unspecified", "is_multicast", "is_reserved")


def _special(address: IPAddress, kind: str) -> bool:
    if kind == "is_reserved" and any(address in network for network in _NAT64):
        return False  # NAT64 is judged by the IPv4 address it carries
    return bool(getattr(address, kind))


def refusal(
    address: IPAddress,
    allowed: tuple[IPNetwork, ...],
    denied: tuple[IPNetwork, ...],
    own: frozenset[IPAddress],
) -> str | None:
    """Why a connection to ``address`` is refused, or None if it is allowed: refused if the
    address, or the IPv4 address it carries, is."""
    forms = _forms(address)
    if any(form in network for form in forms for network in allowed):
        return None
    for form in forms:
        reason = _refusal(form, denied, own)
        if reason is not None:
            return reason if form == address else f"{reason} ({form}, carried in it)"
    return None


def _refusal(
    address: IPAddress, denied: tuple[IPNetwork, ...], own: frozenset[IPAddress]
) -> str | None:
    if address.is_loopback:
        return "a loopback address"
    if address in own:
        return "this host's own address"
    if address.is_link_local:
        return "a link-local address (where cloud metadata services answer)"
    about = next((about for net, about in _METADATA if address in net), None)
    if about is not None:
        return f"a cloud metadata address ({about})"
    if any(_special(address, kind) for kind in NOT_A_SOURCE) or address in _THIS_NETWORK:
        return "not an address a source can be at"
    if any(address in network for network in denied):
        return "in a denied network (TOOLREACH_OUTBOUND_DENIED_NETWORKS)"
    return None
