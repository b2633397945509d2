"""Settings fail loudly and name the variable; every router weight is a setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.settings import Settings, SettingsError, load_settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("TOOLREACH_"):
            monkeypatch.delenv(key)


def test_defaults() -> None:
    settings = load_settings(_env_file=None)
    assert settings.database_url == "sqlite:///./toolreach.db"
    assert settings.admin_keys == () and settings.agent_keys == ()
    assert settings.router.missing_param_penalty == 0.1


def test_keys_are_comma_separated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLREACH_ADMIN_KEYS", "a" * 16 + ", " + "b" * 16)
    assert load_settings(_env_file=None).admin_keys == ("a" * 16, "b" * 16)


def test_router_weights_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLREACH_ROUTER__POOL_SIZE", "77")
    monkeypatch.setenv("TOOLREACH_ROUTER__FIELDS__NAME", "5")
    router = load_settings(_env_file=None).router
    assert router.pool_size == 77 and router.fields.name == 5


@pytest.mark.parametrize(
    ("name", "value", "needle"),
    [
        ("TOOLREACH_DATABASE_URL", "mysql://x", "TOOLREACH_DATABASE_URL"),
        ("TOOLREACH_MAX_BODY_BYTES", "12", "TOOLREACH_MAX_BODY_BYTES"),
        ("TOOLREACH_ENCODER", "gpt", "TOOLREACH_ENCODER"),
        ("TOOLREACH_AGENT_KEYS", "short", "16 characters"),
        ("TOOLREACH_ROUTER__POOL_SIZE", "many", "TOOLREACH_ROUTER__POOL_SIZE"),
        ("TOOLREACH_ROUTER__NOPE", "1", "unknown router setting(s): nope"),
        ("TOOLREACH_ROUTER__FIELDS__NOPE", "1", "fields__nope"),
        ("TOOLREACH_ROUTER__SEGMENT_WEIGHT", "1", "segment_weight (now part_weight)"),
        ("TOOLREACH_ROUTER__FUSION", "magic", "TOOLREACH_ROUTER__FUSION must be one of"),
        ("TOOLREACH_ROUTER__MISSING_PARAM_PENALTY", "-1", "TOOLREACH_ROUTER__MISSING_PARAM_"),
        ("TOOLREACH_ROUTER__FIELDS__NAME", "-2", "negative: TOOLREACH_ROUTER__FIELDS__NAME"),
        ("TOOLREACH_ROUTER__POOL_SIZE", "0", "bad setting: TOOLREACH_ROUTER__POOL_SIZE must be"),
        ("TOOLREACH_ROUTER__MMR_LAMBDA", "1.5", "TOOLREACH_ROUTER__MMR_LAMBDA must be within"),
        ("TOOLREACH_ROUTER__MENTION_SOFTENING", "2", "MENTION_SOFTENING must be within [0, 1]"),
        ("TOOLREACH_ROUTER__EXAMPLES_FLOOR", "1", "EXAMPLES_FLOOR must be within [0, 1)"),
    ],
)
def test_a_bad_value_is_named(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, needle: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError, match="bad setting") as caught:
        load_settings(_env_file=None)
    assert needle in str(caught.value)


def test_a_variable_no_setting_reads_is_warned_of(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("TOOLREACH_LOAD_DEMO=true\nTOOLREACH_ADMN_KEYS=x\n")
    monkeypatch.setenv("TOOLREACH_AGENT_KEY", "k" * 20)  # TOOLREACH_AGENT_KEYS meant
    monkeypatch.setenv("TOOLREACH_ROUTER__POOL_SIZE", "60")  # nested: a setting
    monkeypatch.setenv("TOOLREACH_TEST_PG", "postgresql://elsewhere")  # the tests' own
    with caplog.at_level("WARNING", logger="toolreach"):
        settings = load_settings()
    assert settings.agent_keys == () and settings.router.pool_size == 60
    warned = sorted(r.getMessage().split()[0] for r in caplog.records)
    assert warned == ["TOOLREACH_ADMN_KEYS", "TOOLREACH_AGENT_KEY"]
    caplog.clear()
    with caplog.at_level("WARNING", logger="toolreach"):
        load_settings(_env_file=None)
    assert [r.getMessage().split()[0] for r in caplog.records] == ["TOOLREACH_AGENT_KEY"]


def test_every_setting_is_documented() -> None:
    """Each setting is named (TOOLREACH_...) in docs/CONFIGURATION.md or another docs page."""
    docs = "".join(page.read_text() for page in (ROOT / "docs").glob("*.md"))
    missing = [name for name in Settings.model_fields if f"TOOLREACH_{name.upper()}" not in docs]
    assert not missing, missing
