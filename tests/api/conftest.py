"""Fixtures of the feedback-loop tests: an app whose event writer writes only when told to."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.embedding.encoders import make_encoder
from app.main import create_app
from tests.api.loop_support import DASHBOARD_KEY, TOOLS
from tests.conftest import ADMIN, make_settings


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """For the command line: a scratch working directory, its own SQLite file, the fake
    encoder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOOLREACH_DATABASE_URL", f"sqlite:///{tmp_path}/cli.db")
    monkeypatch.setenv("TOOLREACH_ENCODER", "fake")
    return tmp_path


@pytest.fixture
def loop(database_url: str) -> Iterator[TestClient]:
    """The app with a writer that only writes when told to (so feedback finds pending events)."""
    settings = make_settings(
        database_url,
        dashboard_keys=(DASHBOARD_KEY,),
        event_flush_seconds=3600,
        prior_refresh_seconds=3600,
    )
    app = create_app(settings, encoder=make_encoder("fake"))
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.post("/v1/tools/bulk", json={"tools": TOOLS}, headers=ADMIN)
        assert response.status_code == 200, response.text
        other = {
            "tools": [{"name": "ping", "description": "Checks liveness."}],
            "namespace": "other",
        }
        assert client.post("/v1/tools/bulk", json=other, headers=ADMIN).status_code == 200
        yield client
