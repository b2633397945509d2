"""The in-memory index under concurrent writes: routes never see a half-built snapshot."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from app.db import unit_of_work
from app.embedding.encoders import make_encoder
from app.route.service import route_step
from app.schemas import RouteRequest
from app.services import Services, build_services
from app.tools.catalog import delete_card, write_cards
from registry.card import ToolCard
from tests.conftest import make_settings


def card(i: int, version: int) -> ToolCard:
    return ToolCard(
        name=f"tool_{i}",
        description=f"Weather and orders tool number {i}, revision {version}.",
        tags=[f"v{version}"],
    )


@pytest.fixture
def services(database_url: str) -> Iterator[Services]:
    built = build_services(make_settings(database_url), make_encoder("fake"))
    with unit_of_work(built.session_factory) as session:
        write_cards(session, built.encoder, [card(i, 0) for i in range(20)])
    built.index.sync()
    yield built
    built.close()


def test_routes_during_writes_see_whole_snapshots(services: Services) -> None:
    stop = threading.Event()
    problems: list[str] = []
    routes = 0

    def writer() -> None:
        for version in range(1, 16):
            with unit_of_work(services.session_factory) as session:
                write_cards(session, services.encoder, [card(version, version)])
                if version % 3 == 0:
                    delete_card(session, "default", f"tool_{version - 1}")
            services.index.sync()
        stop.set()

    def router() -> None:
        nonlocal routes
        while not stop.is_set():
            snapshot = services.index.get("default")
            assert snapshot is not None
            if set(snapshot.index.names) != set(snapshot.cards):
                problems.append("index and cards of one snapshot disagree")
            answer = route_step(RouteRequest(query="weather orders tool", k=50), services.routing)
            names = [c.name for c in answer.candidates]
            if len(names) != len(set(names)) or not names:
                problems.append(f"bad answer: {names}")
            routes += 1

    threads = [threading.Thread(target=router) for _ in range(3)]
    for thread in threads:
        thread.start()
    writer()
    for thread in threads:
        thread.join(30)
    assert problems == []
    assert routes > 0
    final = services.index.get("default")
    assert final is not None
    assert "tool_14" not in final.cards  # deleted at version 15
    assert final.cards["tool_15"].tags == ["v15"]
    assert len(final.cards) == 20 - 5  # tool_2, 5, 8, 11 and 14 were deleted
