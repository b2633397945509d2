"""Settings fail loudly and name the variable; every router weight is a setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.db import DatabaseLimits
from app.settings import (
    SettingsError,
    load_settings,
    unknown_variables,
    variable_names,
)

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
        ("TOOLREACH_ROUTER__PRIOR_WEIGHT", "0.1", "removed: prior_weight (the usage prior and"),
        ("TOOLREACH_ROUTER__MEMORY_FLOOR", "0.8", "removed: memory_floor"),
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
    missing = [name for name in variable_names() if name not in docs]
    assert not missing, missing


# Every variable users set before the settings were grouped by topic (issue 39 item 5): each
# must still be read, under the same name.
BEFORE_GROUPS = [
    "admin_keys",
    "agent_keys",
    "auth_failure_window_seconds",
    "auth_failures_per_client",
    "cosine_int8_dims",
    "cosine_int8_min_tools",
    "cosine_moment_dims",
    "dashboard_keys",
    "database_connect_timeout",
    "database_lock_timeout",
    "database_max_overflow",
    "database_pool_size",
    "database_pool_timeout",
    "database_prepare_threshold",
    "database_statement_timeout",
    "database_url",
    "embedding_cache_size",
    "encoder",
    "encoder_bulk_threads",
    "encoder_mix_weight",
    "encoder_parallel_batches",
    "encoder_threads",
    "event_batch_size",
    "event_buffer_size",
    "event_flush_seconds",
    "event_retention_days",
    "event_retry_max_seconds",
    "feedback_wait_seconds",
    "feedback_waits",
    "feedback_waits_per_key",
    "gateway_attempts",
    "gateway_batch_max",
    "gateway_breaker_failures",
    "gateway_breaker_seconds",
    "gateway_max_response_bytes",
    "gateway_source_concurrency",
    "gateway_timeout_seconds",
    "hash_queries",
    "index_poll_seconds",
    "key_refresh_seconds",
    "learning",
    "learning_interval_seconds",
    "learning_min_new_steps",
    "listen_database_url",
    "load_demo",
    "log_level",
    "lookalike_floor",
    "lookalike_neighbours",
    "malloc_arena_max",
    "malloc_mmap_threshold",
    "max_body_bytes",
    "max_import_bytes",
    "max_url_bytes",
    "mcp_allowed_hosts",
    "mcp_allowed_origins",
    "mcp_key_namespaces",
    "metrics_public",
    "model_dir",
    "outbound_allowed_networks",
    "outbound_denied_networks",
    "prior_half_life_days",
    "prior_refresh_seconds",
    "rate_limit_flush_seconds",
    "rate_limit_per_client",
    "rate_limit_per_key",
    "rate_limit_window_seconds",
    "route_max_batch",
    "route_max_queue",
    "route_workers",
    "secret_dirs",
    "server_header_timeout",
    "server_keepalive_timeout",
    "server_max_connections",
    "slots_exports",
    "slots_imports",
    "slots_reports",
    "source_max_bytes",
    "source_max_card_bytes",
    "source_max_depth",
    "source_max_documents",
    "source_max_listing_bytes",
    "source_max_tools",
    "source_read_seconds",
    "source_resync_min_seconds",
    "source_stdio_allowed",
    "source_sync_seconds",
    "source_watch",
    "trust_keys",
    "trusted_proxies",
]


# Settings added since the grouping: the card doctor's room (issue 38 item 3).
ADDED_SINCE = [
    "advice_seconds",
    "advice_fresh_seconds",
    "advice_wait_seconds",
    "advice_waits_per_key",
    "advice_queue",
]


def test_every_variable_set_before_the_groups_is_still_a_setting() -> None:
    names = [f"TOOLREACH_{name.upper()}" for name in BEFORE_GROUPS]
    added = {f"TOOLREACH_{name.upper()}" for name in ADDED_SINCE}
    assert set(names) | added == set(variable_names()) - {"TOOLREACH_ROUTER"}
    assert unknown_variables(names) == []


GROUPED_VALUES = [
    ("TOOLREACH_DATABASE_POOL_SIZE", "7", ("database", "pool_size"), 7),
    ("TOOLREACH_DATABASE_STATEMENT_TIMEOUT", "20", ("database", "statement_timeout"), 20.0),
    ("TOOLREACH_GATEWAY_TIMEOUT_SECONDS", "2.5", ("gateway", "timeout_seconds"), 2.5),
    ("TOOLREACH_GATEWAY_BATCH_MAX", "5", ("gateway", "batch_max"), 5),
    ("TOOLREACH_SOURCE_STDIO_ALLOWED", "true", ("source", "stdio_allowed"), True),
    ("TOOLREACH_SOURCE_MAX_TOOLS", "12", ("source", "max_tools"), 12),
]


@pytest.mark.parametrize(("name", "value", "where", "expected"), GROUPED_VALUES)
def test_a_grouped_setting_is_read_under_the_name_users_set(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    name: str,
    value: str,
    where: tuple[str, str],
    expected: object,
) -> None:
    """The environment, a .env file and code all name a group's member as before."""
    group, member = where
    monkeypatch.setenv(name, value)
    assert getattr(getattr(load_settings(_env_file=None), group), member) == expected
    monkeypatch.delenv(name)
    (tmp_path / ".env").write_text(f"{name.lower()}={value}\n")  # names in any case, as before
    assert getattr(getattr(load_settings(_env_file=tmp_path / ".env"), group), member) == expected
    in_code = load_settings(_env_file=None, **{name.removeprefix("TOOLREACH_").lower(): value})
    assert getattr(getattr(in_code, group), member) == expected


def test_the_environment_wins_over_the_env_file_for_a_grouped_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / ".env").write_text(
        "TOOLREACH_DATABASE_POOL_SIZE=9\nTOOLREACH_DATABASE_MAX_OVERFLOW=3\n"
    )
    monkeypatch.setenv("TOOLREACH_DATABASE_POOL_SIZE", "4")
    database = load_settings(_env_file=tmp_path / ".env").database
    assert (database.pool_size, database.max_overflow) == (4, 3)
    assert database.lock_timeout == DatabaseLimits().lock_timeout  # the rest: the defaults


def test_a_bad_grouped_value_is_named_as_users_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLREACH_GATEWAY_ATTEMPTS", "0")
    with pytest.raises(SettingsError, match="TOOLREACH_GATEWAY_ATTEMPTS: Input should be"):
        load_settings(_env_file=None)


def test_a_typo_in_a_groups_nested_form_is_warned_of() -> None:
    names = ["TOOLREACH_DATABASE__POOL_SIZE", "TOOLREACH_DATABASE__POOL_SIZ"]
    assert unknown_variables(names) == ["TOOLREACH_DATABASE__POOL_SIZ"]
