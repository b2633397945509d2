"""A new kind of evidence is one field of the namespace's view and one vote: nothing else.

The toy evidence here names a favourite tool of the namespace. It is added the way a real
kind is (docs/ARCHITECTURE.md, "Where a new kind of evidence goes"): a view with one more
field, one vote appended to ``votes.VOTES``. The router, its options, the scores and the
answer's ``stages`` are untouched, and a namespace without the evidence routes as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from app.embedding.encoders import FakeEncoder
from app.routing import (
    NamespaceView,
    RouteOptions,
    Router,
    RouterConfig,
    RouterIndex,
    ToolDoc,
    embedding_text,
    query_texts,
    votes,
)
from app.routing.scores import Scores

ENCODER = FakeEncoder(dim=64)
CONFIG = RouterConfig()
DOCS = [
    ToolDoc("get_weather", "Current weather for a city", "Temperature and rain now."),
    ToolDoc("get_forecast", "Weather forecast for a city", "The next days' weather."),
    ToolDoc("send_email", "Send an e-mail", "Write to someone."),
]
INDEX = RouterIndex.build(DOCS, ENCODER.encode([embedding_text(d) for d in DOCS]), CONFIG)
STEP = "what is the weather in Paris"


@dataclass(frozen=True, slots=True)
class ToyView(NamespaceView):
    favourite: str | None = None  # the one new field


def favourite_vote(ballot: votes.Ballot, scores: Scores) -> np.ndarray | None:
    """The one new vote: +2 for the namespace's favourite tool."""
    favourite = getattr(ballot.view, "favourite", None)
    if favourite is None:
        return None
    names = [ballot.view.index.names[t] for t in scores.tool_ids.tolist()]
    return np.array([2.0 if n == favourite else 0.0 for n in names], dtype=np.float32)


def ask(view: NamespaceView) -> list:
    return Router(CONFIG).route(view, STEP, ENCODER.encode(query_texts(STEP)), RouteOptions(k=3))


def test_a_toy_kind_of_evidence_is_one_field_and_one_vote(monkeypatch: pytest.MonkeyPatch) -> None:
    before = ask(NamespaceView(INDEX))
    assert before[0].name != "get_forecast"
    monkeypatch.setattr(votes, "VOTES", (*votes.VOTES, ("favourite", favourite_vote)))
    after = ask(ToyView(INDEX, favourite="get_forecast"))
    assert after[0].name == "get_forecast"
    assert after[0].stages["favourite"] == 2.0
    for candidate in after:  # the contributions still add up to the score
        assert sum(candidate.stages.values()) == pytest.approx(candidate.score, abs=1e-6)
    # A namespace without the evidence routes exactly as before, with no such contribution.
    assert ask(NamespaceView(INDEX)) == before
    assert all("favourite" not in c.stages for c in ask(ToyView(INDEX)))
