"""/mcp's settings: the hosts it answers, and the namespace a key gets; loud on a bad value."""

from __future__ import annotations

import os

import pytest

from app.mcp.http import transport_security
from app.settings import SettingsError, load_settings

KEY = "k" * 16


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("TOOLREACH_"):
            monkeypatch.delenv(key)


def test_local_hosts_only_by_default() -> None:
    security = transport_security(load_settings(_env_file=None))
    assert security.enable_dns_rebinding_protection
    assert set(security.allowed_hosts) == {
        "127.0.0.1",
        "127.0.0.1:*",
        "localhost",
        "localhost:*",
        "[::1]",
        "[::1]:*",
    }
    assert "http://localhost:*" in security.allowed_origins


def test_hosts_from_the_environment_and_star_turns_the_check_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLREACH_MCP_ALLOWED_HOSTS", "tr.example.com, tr.example.com:*")
    monkeypatch.setenv("TOOLREACH_MCP_ALLOWED_ORIGINS", "https://app.example.com")
    security = transport_security(load_settings(_env_file=None))
    assert security.allowed_hosts == ["tr.example.com", "tr.example.com:*"]
    assert security.allowed_origins == ["https://app.example.com"]
    monkeypatch.setenv("TOOLREACH_MCP_ALLOWED_HOSTS", "*")
    assert not transport_security(load_settings(_env_file=None)).enable_dns_rebinding_protection


def test_key_namespaces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLREACH_AGENT_KEYS", KEY)
    monkeypatch.setenv("TOOLREACH_MCP_KEY_NAMESPACES", f'{{"{KEY}": "billing"}}')
    assert load_settings(_env_file=None).mcp_key_namespaces == {KEY: "billing"}


@pytest.mark.parametrize(
    ("mapping", "says"),
    [
        (f'{{"{KEY}": "bil ling"}}', "TOOLREACH_MCP_KEY_NAMESPACES: not a namespace name"),
        ('{"another-key-0123456789": "billing"}', "neither an admin nor an agent key"),
    ],
)
def test_a_bad_key_namespace_stops_start_up(
    monkeypatch: pytest.MonkeyPatch, mapping: str, says: str
) -> None:
    monkeypatch.setenv("TOOLREACH_AGENT_KEYS", KEY)
    monkeypatch.setenv("TOOLREACH_MCP_KEY_NAMESPACES", mapping)
    with pytest.raises(SettingsError, match=says):
        load_settings(_env_file=None)
