"""Fixtures of the feedback-loop tests: an app whose event writer writes only when told to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.encoders import make_encoder
from app.main import create_app
from tests.api.loop_support import DASHBOARD_KEY, TOOLS
from tests.conftest import ADMIN, make_settings


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
