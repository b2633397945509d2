"""route_step, the one way to route a step: it answers, records what it answered, counts it,
and embeds only when its caller has not."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from app.db import unit_of_work
from app.embedding.encoders import FakeEncoder
from app.route.service import EmbeddedStep, route_step, step_texts
from app.schemas import RouteRequest
from app.services import Services, build_services
from app.tools.catalog import write_cards
from registry.card import ToolCard
from tests.conftest import make_settings

CARDS = [
    ToolCard(name="get_weather", description="Current weather and forecast for a city."),
    ToolCard(name="send_email", description="Send an email message to a recipient."),
]


class CountingEncoder(FakeEncoder):
    """The fake encoder, keeping the texts of each call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return super().encode(texts)


@pytest.fixture
def services(tmp_path: Path) -> Iterator[tuple[Services, CountingEncoder]]:
    encoder = CountingEncoder()
    built = build_services(make_settings(f"sqlite:///{tmp_path}/step.db"), encoder)
    with unit_of_work(built.session_factory) as session:
        write_cards(session, built.encoder, CARDS)
    built.index.sync()
    encoder.calls.clear()
    yield built, encoder
    built.close()


def routes_counted(built: Services) -> float:
    value = built.metrics.registry.get_sample_value(
        "toolreach_routes_total", {"namespace": "default", "result": "candidates"}
    )
    return value or 0.0


def test_a_route_records_the_answer_it_gives_and_counts_it(
    services: tuple[Services, CountingEncoder],
) -> None:
    built, encoder = services
    answer = route_step(RouteRequest(query="weather in Paris", k=2), built.routing)
    assert answer.candidates[0].name == "get_weather"
    assert encoder.calls == [["weather in Paris"]]
    event = built.events.pending(answer.route_id)
    assert event is not None
    assert event.query == "weather in Paris"
    assert [(c.name, c.score, dict(c.stages)) for c in event.candidates] == [
        (c.name, c.score, c.stages) for c in answer.candidates
    ]
    assert routes_counted(built) == 1


def test_a_step_its_caller_embedded_is_not_embedded_again(
    services: tuple[Services, CountingEncoder],
) -> None:
    built, encoder = services
    request = RouteRequest(query="email the invoice to anna")
    texts = step_texts(request, built.index)
    step = EmbeddedStep(texts, FakeEncoder().encode(texts), seconds=0.001)
    given = route_step(request, built.routing, step=step)
    assert encoder.calls == []
    embedded_here = route_step(request, built.routing)
    assert [(c.name, c.score) for c in given.candidates] == [
        (c.name, c.score) for c in embedded_here.candidates
    ]
    assert given.route_id != embedded_here.route_id
    assert routes_counted(built) == 2


def test_the_wait_before_the_route_counts_as_its_latency(
    services: tuple[Services, CountingEncoder],
) -> None:
    built, _ = services
    answer = route_step(
        RouteRequest(query="weather"), built.routing, started=time.perf_counter() - 2
    )
    event = built.events.pending(answer.route_id)
    assert event is not None and event.latency_ms >= 2000
