"""A write embeds its cards before it takes the registry's revision lock, holding no pooled
connection meanwhile: a slow model call never holds back another write (issue 21)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from app.db import unit_of_work
from app.embedding.encoders import FakeEncoder
from app.services import build_services
from app.tools import catalog
from app.tools import service as tools
from registry import repository
from tests.conftest import make_settings


class GatedEncoder:
    """The fake encoder, which waits for ``release`` once it has been called."""

    def __init__(self) -> None:
        self.inner = FakeEncoder()
        self.name, self.dim = self.inner.name, self.inner.dim
        self.called = threading.Event()
        self.release = threading.Event()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.called.set()
        assert self.release.wait(30), "the test never released the model"
        return self.inner.encode(texts)


def test_another_write_lands_while_a_write_is_embedding(postgres_url: str) -> None:
    from tests.conftest import empty_database

    empty_database(postgres_url)
    encoder = GatedEncoder()
    services = build_services(make_settings(postgres_url), encoder)
    factory = services.session_factory
    encoder.release.set()  # the first card is embedded at once
    with unit_of_work(factory) as session:
        body = {"name": "old", "description": "Old."}
        tools.create_tool(session, services.encoder, body, None, sessions=factory)
    encoder.release.clear()
    encoder.called.clear()
    failures: list[BaseException] = []

    def slow_write() -> None:
        try:
            with unit_of_work(factory) as session:
                body = {"name": "slow", "description": "Embedded slowly."}
                tools.create_tool(session, services.encoder, body, None, sessions=factory)
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    writer = threading.Thread(target=slow_write)
    writer.start()
    try:
        assert encoder.called.wait(30)
        # The slow write is in its model call: it holds no connection and no lock, so a
        # delete (which takes the revision lock) lands at once.
        assert services.engine.pool.checkedout() == 0  # type: ignore[attr-defined]
        with unit_of_work(factory) as session:
            catalog.delete_card(session, "default", "old")
        with unit_of_work(factory) as session:
            assert repository.namespace_names(session, "default") == []
    finally:
        encoder.release.set()
        writer.join(30)
    assert not failures
    with unit_of_work(factory) as session:
        assert repository.namespace_names(session, "default") == ["slow"]
        assert repository.current_revision(session) == 3
    services.close()
