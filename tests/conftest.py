"""Shared fixtures: real databases (Postgres on 127.0.0.1:5432 and a SQLite file), the app."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from app import migrate
from app.db import make_engine
from app.embedding.encoders import make_encoder
from app.main import create_app
from app.settings import Settings
from registry.models import Base

os.environ.setdefault("HF_HUB_OFFLINE", "1")

PG_ADMIN_URL = os.environ.get("TOOLREACH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
ADMIN_KEY = "test-admin-key-0123456789"
AGENT_KEY = "test-agent-key-0123456789"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
AGENT = {"Authorization": f"Bearer {AGENT_KEY}"}


def _pg_execute(sql: str) -> None:
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(sql)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A fresh Postgres database for this test session, migrated to head; dropped after."""
    name = f"toolreach_test_{uuid.uuid4().hex[:10]}"
    _pg_execute(f'CREATE DATABASE "{name}"')
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        migrate.upgrade(url)
        yield url
    finally:
        _pg_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'toolreach.db'}"
    migrate.upgrade(url)
    return url


def empty_database(url: str) -> None:
    """Delete every row (children first) and reset the registry revision."""
    engine = make_engine(url)
    with engine.begin() as conn:
        for table in reversed(Base.metadata.sorted_tables):
            if table.name != "registry_state":
                conn.execute(table.delete())
        conn.execute(text("UPDATE registry_state SET revision = 0"))
    engine.dispose()


@pytest.fixture(params=["postgres", "sqlite"])
def database_url(request: pytest.FixtureRequest) -> str:
    """Each API test runs against both backends, on an emptied database."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    empty_database(url)
    return url


def make_settings(url: str, **overrides: object) -> Settings:
    values: dict[str, Any] = {
        "database_url": url,
        "admin_keys": (ADMIN_KEY,),
        "agent_keys": (AGENT_KEY,),
        "encoder": "fake",
        "index_poll_seconds": 3600,
        **overrides,
    }
    return Settings(_env_file=None, **values)


@pytest.fixture
def client(database_url: str) -> Iterator[TestClient]:
    app = create_app(make_settings(database_url), encoder=make_encoder("fake"))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client
