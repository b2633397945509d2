"""The `toolreach source` commands, the outbound rules, the breaker, secret references."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import anyio
import pytest

from app.cli.main import main
from app.cli.sources import value
from app.gateway.limits import Breaker
from app.sources.masking import mask
from app.sources.outbound import OutboundRefused, OutboundRules, http_client
from app.sources.schemas import SecretRef
from app.sources.secrets import SecretMissing, resolve

MULTI = Path(__file__).resolve().parents[1] / "data" / "openapi_multi" / "api.yaml"


def test_source_commands(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOOLREACH_DATABASE_URL", f"sqlite:///{tmp_path}/cli.db")
    monkeypatch.setenv("TOOLREACH_ENCODER", "fake")
    assert main(["source", "add", "kennel", "--openapi", str(MULTI), "--prefix", "k."]) == 0
    assert "kennel: synced, 3 tools (3 created" in capsys.readouterr().out
    assert main(["source", "list", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)["items"]
    assert listed["name"] == "kennel" and listed["tools"] == 3
    assert main(["source", "sync", "kennel"]) == 0
    assert "kennel: unchanged" in capsys.readouterr().out
    assert main(["source", "remove", "kennel"]) == 0
    assert "3 tools retired" in capsys.readouterr().out
    assert main(["source", "sync", "kennel"]) == 2
    assert "no source 'kennel'" in capsys.readouterr().err
    assert main(["source", "add", "bad", "--openapi", str(tmp_path / "none.yaml")]) == 2
    assert "none.yaml: no such file" in capsys.readouterr().err


def test_cli_values() -> None:
    assert value("plain") == "plain"
    assert value("env:TOKEN") == {"env": "TOKEN"}
    assert value("Bearer env:TOKEN") == {"env": "TOKEN", "prefix": "Bearer "}
    assert value("file:/run/secrets/x") == {"file": "/run/secrets/x"}


@pytest.mark.parametrize(
    ("address", "refused"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("::ffff:169.254.169.254", "link-local"),  # IPv4-mapped: the same address
        ("0.0.0.0", "not an address"),
        ("224.0.0.1", "not an address"),
        ("93.184.216.34", None),
        ("10.1.2.3", None),
    ],
)
def test_address_rules(address: str, refused: str | None) -> None:
    reason = OutboundRules().refusal(ipaddress.ip_address(address))
    assert (reason is None) if refused is None else (refused in str(reason))


def test_settings_allow_and_deny() -> None:
    rules = OutboundRules(
        allowed=(ipaddress.ip_network("127.0.0.0/8"),),
        denied=(ipaddress.ip_network("10.0.0.0/8"),),
        own=frozenset({ipaddress.ip_address("192.0.2.7")}),
    )
    assert rules.refusal(ipaddress.ip_address("127.0.0.5")) is None
    assert "denied" in str(rules.refusal(ipaddress.ip_address("10.9.9.9")))
    assert "own" in str(rules.refusal(ipaddress.ip_address("192.0.2.7")))


def test_guard_sits_under_every_request() -> None:
    """The rules hold in the connection pool: no request reaches a refused address."""

    async def attempt() -> None:
        async with http_client(OutboundRules(), timeout=2) as client:
            await client.get("http://localhost:9/")

    with pytest.raises(OutboundRefused, match=r"loopback|own address"):
        anyio.run(attempt)
    with pytest.raises(OutboundRefused, match="credentials"):
        anyio.run(OutboundRules().check_url, "http://user:pw@example.com/")
    with pytest.raises(OutboundRefused, match="http"):
        anyio.run(OutboundRules().check_url, "file:///etc/passwd")


def test_breaker_opens_half_opens_and_closes() -> None:
    now = [0.0]
    breaker = Breaker(failures=2, cooldown=10, clock=lambda: now[0])
    first = breaker.enter()
    assert first is not None and not first.trial
    breaker.failed(first)
    second = breaker.enter()
    assert second is not None
    breaker.failed(second)
    assert breaker.enter() is None and breaker.retry_after() == 10
    now[0] = 10
    trial = breaker.enter()  # the half-open trial
    assert trial is not None and trial.trial
    assert breaker.enter() is None  # only one
    breaker.failed(trial)  # the trial failed: open again
    assert breaker.enter() is None
    now[0] = 20
    trial = breaker.enter()
    assert trial is not None
    breaker.answered(trial)
    assert breaker.closed and breaker.enter() is not None and breaker.enter() is not None


def test_every_trial_ends_the_half_open_state() -> None:
    """A trial that ends in a 4xx or a tool's error closes the breaker (the source
    answered); one that ends saying nothing (the caller's deadline, a bug, an argument
    refused before sending) gives the trial back. Before, such a trial kept it forever."""
    now = [0.0]
    breaker = Breaker(failures=1, cooldown=10, clock=lambda: now[0])
    breaker.failed(breaker.enter())  # type: ignore[arg-type]
    now[0] = 10
    trial = breaker.enter()
    assert trial is not None and trial.trial
    breaker.abandoned(trial)  # nothing learned: the next call is the trial
    assert not breaker.closed
    again = breaker.enter()
    assert again is not None and again.trial
    breaker.answered(again)
    breaker.abandoned(again)  # after a verdict: nothing more
    assert breaker.closed and not breaker.trial


def test_secret_refs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "token").write_text("abc123456\n")
    assert resolve(SecretRef(file=str(tmp_path / "token")), [str(tmp_path)]) == "abc123456"
    with pytest.raises(SecretMissing, match="outside"):
        resolve(SecretRef(file=str(tmp_path / "token")), ["/run/secrets"])
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    with pytest.raises(SecretMissing, match="NOT_SET_ANYWHERE"):
        resolve(SecretRef(env="NOT_SET_ANYWHERE"), [])
    with pytest.raises(ValueError, match="TOOLREACH"):
        SecretRef(env="TOOLREACH_ADMIN_KEYS")
    assert mask({"a": ["x abc123456 y"]}, ["abc123456"]) == {"a": ["x [secret] y"]}
