"""What a serving process does once at start and undoes at stop."""

from __future__ import annotations

import gc

from fastapi.testclient import TestClient

from app.embedding.encoders import make_encoder
from app.main import create_app
from tests.conftest import make_settings


def test_serve_freezes_what_start_up_built_out_of_the_collectors_reach(database_url: str) -> None:
    # `toolreach serve` passes freeze_gc=True: a full collection then skips the framework,
    # the models and the first index, instead of walking them every few seconds under load.
    assert gc.get_freeze_count() == 0
    app = create_app(make_settings(database_url), encoder=make_encoder("fake"), freeze_gc=True)
    with TestClient(app) as client:
        frozen = gc.get_freeze_count()
        assert client.get("/readyz").status_code == 200
    assert frozen > 10_000  # the imported framework alone is tens of thousands of objects
    assert gc.get_freeze_count() == 0  # stopped: the app's objects are collectable again


def test_an_app_built_without_it_freezes_nothing(database_url: str) -> None:
    with TestClient(create_app(make_settings(database_url), encoder=make_encoder("fake"))):
        assert gc.get_freeze_count() == 0
