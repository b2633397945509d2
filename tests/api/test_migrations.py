"""Migrations are the only way the schema changes: head, no drift, down and up again."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import inspect

from app import migrate
from app.db import make_engine
from tests.conftest import PG_ADMIN_URL, _pg_execute


@pytest.fixture(params=["postgres", "sqlite"])
def blank_url(request: pytest.FixtureRequest, tmp_path: object) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/m.db"
        return
    name = f"toolreach_mig_{uuid.uuid4().hex[:10]}"
    _pg_execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        _pg_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def tables(url: str) -> set[str]:
    engine = make_engine(url)
    names = set(inspect(engine).get_table_names())
    engine.dispose()
    return names


def test_upgrade_check_downgrade_upgrade(blank_url: str) -> None:
    migrate.upgrade(blank_url)
    migrate.check(blank_url)  # raises if the models and the migrations drift apart
    migrate.ensure_current(blank_url)
    assert {"tools", "tool_versions", "embeddings", "registry_state"} <= tables(blank_url)
    migrate.downgrade(blank_url, "base")
    assert tables(blank_url) <= {"alembic_version"}
    with pytest.raises(migrate.NotMigrated, match="toolreach migrate"):
        migrate.ensure_current(blank_url)
    migrate.upgrade(blank_url)
    migrate.check(blank_url)
