"""Where a source may be: the clouds' metadata addresses in every form, and every address of
this host's interfaces (app/sources/addresses.py)."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest
from fastapi.testclient import TestClient

from app.sources import addresses
from app.sources.addresses import own_addresses
from app.sources.outbound import OutboundRefused, OutboundRules, http_client
from tests.conftest import ADMIN
from tests.sources.conftest import app_client


@pytest.mark.parametrize(
    ("address", "refused"),
    [
        ("fd00:ec2::254", "AWS instance metadata"),  # IMDS over IPv6: passed before
        ("fd00:ec2::253", "AWS instance metadata"),  # its DNS, fd00:ec2::123 its time
        ("100.100.100.200", "Alibaba Cloud metadata"),  # passed before
        ("::ffff:100.100.100.200", "Alibaba Cloud metadata"),  # the same, IPv4-mapped
        ("168.63.129.16", "Azure"),
        ("fd20:ce::254", "Google Cloud metadata"),
        ("fd00:c1::a9fe:a9fe", "Oracle Cloud metadata"),
        ("192.0.0.192", "Oracle Cloud Classic"),
        ("64:ff9b::a9fe:a9fe", "169.254.169.254, carried in it"),  # NAT64
        ("2002:a9fe:a9fe::1", "169.254.169.254, carried in it"),  # 6to4
        ("2002:7f00:1::1", "loopback address (127.0.0.1, carried in it)"),
        ("0.1.2.3", "not an address"),
        ("::a9fe:a9fe", "not an address"),  # IPv4-compatible (deprecated)
        ("64:ff9b::5db8:d822", None),  # NAT64 to a public address: a public address
        ("::ffff:93.184.216.34", None),
        ("100.64.1.2", None),  # the rest of the shared (carrier) range: a private network
    ],
)
def test_metadata_addresses_in_every_form(address: str, refused: str | None) -> None:
    reason = OutboundRules().refusal(ipaddress.ip_address(address))
    assert (reason is None) if refused is None else (refused in str(reason)), reason


def test_every_interface_address_is_this_hosts_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not only what the host's name resolves to (which is 127.0.0.1 on many machines)."""
    fake = [
        SimpleNamespace(ips=[SimpleNamespace(ip="127.0.0.1"), SimpleNamespace(ip="198.51.100.7")]),
        SimpleNamespace(ips=[SimpleNamespace(ip=("2001:db8::7", 0, 0))]),
        SimpleNamespace(ips=[SimpleNamespace(ip=("fe80::7%eth0", 0, 2))]),
    ]
    monkeypatch.setattr(addresses.ifaddr, "get_adapters", lambda: fake)
    monkeypatch.setattr(addresses.socket, "gethostname", lambda: "localhost")
    found = own_addresses()
    assert {"198.51.100.7", "2001:db8::7", "fe80::7"} <= {str(a) for a in found}
    # Looked up again at once (and put back as it was after the test).
    monkeypatch.setattr(addresses.HOST, "_at", -1e9)
    monkeypatch.setattr(addresses.HOST, "_addresses", frozenset())
    rules = OutboundRules()
    for text in ("198.51.100.7", "2001:db8::7", "::ffff:198.51.100.7"):
        assert "this host's own address" in str(rules.refusal(ipaddress.ip_address(text)))


def _machine_address() -> str:
    """One of this machine's own addresses that is not loopback or link-local."""
    for address in sorted(addresses._interface_addresses(), key=str):
        if not (address.is_loopback or address.is_link_local):
            return str(address)
    pytest.skip("this machine has no address but loopback and link-local")


def test_the_machines_own_address_is_refused_at_every_connection() -> None:
    own = _machine_address()
    host = f"[{own}]" if ":" in own else own

    async def attempt() -> None:
        async with http_client(OutboundRules(), timeout=2) as client:
            await client.get(f"http://{host}:9/")

    with pytest.raises(OutboundRefused, match="this host's own address"):
        anyio.run(attempt)


def test_a_base_url_at_the_machines_own_address_is_refused(sqlite_db: str, tmp_path: Path) -> None:
    """Before, it registered: the host's name resolved to 127.0.0.1 only."""
    own = _machine_address()
    host = f"[{own}]" if ":" in own else own
    path = tmp_path / "doc.json"
    path.write_text(
        '{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/x": {"get":'
        ' {"operationId": "x", "responses": {"200": {"description": "ok"}}}}}}'
    )
    body = {"name": "mine", "kind": "openapi", "path": str(path), "base_url": f"http://{host}:8080"}
    client: TestClient
    with app_client(sqlite_db, outbound_allowed_networks=()) as client:
        answer = client.post("/v1/sources", json=body, headers=ADMIN)
    assert answer.status_code == 502
    assert "this host's own address" in answer.json()["error"]["message"]
