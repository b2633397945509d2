"""Keys in the environment (KEY or KEY@NS1|NS2), the caller's scope, the key store in memory."""

from __future__ import annotations

import pytest

from app.errors import Forbidden, Unauthorized
from app.keys.scope import Caller, require_namespace, require_writable
from app.keys.store import KeyRecord, KeyStore, KeyTable, digest, environment_keys
from app.schemas import RouteRequest, ValidateRequest
from app.settings import SettingsError, load_settings, parse_key_entry
from registry.errors import NotFound

KEY = "k" * 20
OTHER_KEY = "o" * 20


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("TOOLREACH_"):
            monkeypatch.delenv(name)


def test_an_entry_is_a_key_then_its_namespaces() -> None:
    assert parse_key_entry(KEY) == (KEY, None)
    assert parse_key_entry(f"{KEY}@billing") == (KEY, frozenset({"billing"}))
    assert parse_key_entry(f"{KEY}@a|b.c|d:e|a") == (KEY, frozenset({"a", "b.c", "d:e"}))
    # what keys are made of: hex, base64 and base64url, the prefixes of init-local and /v1/keys
    for key in ("0123456789abcdef" * 2, "trk_AbC-_0123456789xyz", "aGVsbG8+/=world12345"):
        assert parse_key_entry(f"{key}@ns") == (key, frozenset({"ns"}))


def test_the_environment_holds_scoped_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLREACH_AGENT_KEYS", f" {KEY}@team-a|team-b , {OTHER_KEY} ")
    settings = load_settings(_env_file=None)
    assert settings.agent_keys == (f"{KEY}@team-a|team-b", OTHER_KEY)
    scoped, everywhere = environment_keys(settings)
    assert (scoped.role, scoped.namespaces, scoped.digest) == (
        "agent",
        frozenset({"team-a", "team-b"}),
        digest(KEY),
    )
    assert everywhere.namespaces is None and scoped.id.startswith("env-")


@pytest.mark.parametrize(
    ("entry", "needle"),
    [
        (f"{KEY}@", "namespace names"),
        (f"{KEY}@team a", "namespace names"),
        (f"{KEY}@a||b", "namespace names"),
        (f"{KEY}@a@b", "'@' may appear once"),
        (f"{KEY}|x@a", "printable characters"),
        ("k" * 15, "16 characters"),
        ("short@billing-team-namespace", "the part before '@'"),
    ],
)
def test_a_bad_entry_stops_start_up_without_showing_the_key(
    monkeypatch: pytest.MonkeyPatch, entry: str, needle: str
) -> None:
    monkeypatch.setenv("TOOLREACH_ADMIN_KEYS", f"{OTHER_KEY},{entry}")
    with pytest.raises(SettingsError) as caught:
        load_settings(_env_file=None)
    message = str(caught.value)
    assert "TOOLREACH_ADMIN_KEYS" in message and "entry 2" in message and needle in message
    assert KEY[:16] not in message and "short" not in message and "team a" not in message


def test_a_key_listed_twice_stops_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLREACH_ADMIN_KEYS", KEY)
    monkeypatch.setenv("TOOLREACH_DASHBOARD_KEYS", f"{OTHER_KEY},{KEY}@team-a")
    with pytest.raises(SettingsError) as caught:
        load_settings(_env_file=None)
    message = str(caught.value)
    assert "TOOLREACH_ADMIN_KEYS entry 1 and TOOLREACH_DASHBOARD_KEYS entry 2" in message
    assert KEY not in message


def test_a_caller_sees_its_namespaces_only() -> None:
    everyone, one, two = (
        Caller("agent"),
        Caller("agent", frozenset({"a"})),
        Caller("agent", frozenset({"a", "b"})),
    )
    assert everyone.can_see("x") and one.can_see("a") and not one.can_see("b")
    assert (everyone.default_namespace(), one.default_namespace(), two.default_namespace()) == (
        "default",
        "a",
        "default",
    )
    assert one.default_namespace("b") == "b"
    assert one.namespace_for() == "a" and require_namespace(two, "b") == "b"
    with pytest.raises(NotFound, match="no namespace 'b' for this key"):
        one.namespace_for("b")
    with pytest.raises(NotFound):
        require_namespace(two, "default")
    with pytest.raises(Forbidden):
        require_writable("b", one.namespaces)
    require_writable("b", None)


def test_a_request_naming_no_namespace_works_in_the_keys_only_one() -> None:
    one = Caller("agent", frozenset({"a"}))
    assert one.in_scope(RouteRequest(query="x")).namespace == "a"
    assert one.in_scope(ValidateRequest(name="t", namespace="a")).namespace == "a"
    with pytest.raises(NotFound):
        one.in_scope(RouteRequest(query="x", namespace="default"))  # named, so not defaulted
    request = RouteRequest(query="x")
    assert Caller("agent").in_scope(request) is request


def record(role: str, namespaces: frozenset[str] | None = None, key: str = KEY) -> KeyRecord:
    return KeyRecord(f"id-{role}-{key[:3]}", role, namespaces, digest(key))  # type: ignore[arg-type]


def test_the_store_finds_a_key_by_its_digest() -> None:
    store = KeyStore([record("agent", frozenset({"a"}))])
    found = store.resolve(KEY)
    assert found is not None and found.caller() == Caller("agent", frozenset({"a"}), found.id)
    assert store.resolve(OTHER_KEY) is None and store.by_id(found.id) is found
    with pytest.raises(Unauthorized):
        store.caller(OTHER_KEY)


@pytest.mark.parametrize(
    ("records", "open_"),
    [
        ([], True),
        ([record("admin")], True),
        ([record("dashboard")], True),
        ([record("agent")], False),
        ([record("admin", frozenset({"a"}))], False),
        ([record("dashboard", frozenset({"a"}))], False),
    ],
)
def test_agent_endpoints_are_open_only_while_no_key_tells_callers_apart(
    records: list[KeyRecord], open_: bool
) -> None:
    assert KeyTable.of(records).open_to_anonymous is open_
