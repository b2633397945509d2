"""Card examples vote for their tool (app/routing/examples.py), on the multilingual columns
when the encoder has them; a namespace whose cards have none routes exactly as before."""

from __future__ import annotations

import numpy as np
import pytest

from app.embedding.encoders import make_encoder
from app.routing import (
    NamespaceView,
    RouteOptions,
    Router,
    RouterConfig,
    RouterIndex,
    ToolDoc,
    embedding_text,
)
from app.routing.examples import card_examples, example_columns
from app.routing.memory import QueryMemory

SAME = "Current weather in a city, right now: temperature, wind and rain."
DOCS = [
    ToolDoc("weather_live", SAME, SAME),
    ToolDoc("weather_local", SAME, SAME),
    ToolDoc("send_email", "Send an email.", "Send an email to someone."),
]
ENCODER = make_encoder("fake")
CONFIG = RouterConfig()
VECTORS = ENCODER.encode([embedding_text(d) for d in DOCS])
INDEX = RouterIndex.build(DOCS, VECTORS, CONFIG)


def vector(text: str) -> np.ndarray:
    return np.asarray(ENCODER.encode([text])[0], dtype=np.float32)


def ranked(
    index: RouterIndex, query: str, examples: QueryMemory | None = None
) -> list[tuple[str, float, dict]]:
    view = NamespaceView(index, examples=examples)
    found = Router(CONFIG).route(view, query, vector(query), RouteOptions(k=3))
    return [(c.name, c.score, c.stages) for c in found]


def test_without_examples_nothing_changes_and_no_stage_is_shown() -> None:
    query = "current weather in Paris"
    assert ranked(INDEX, query, examples=None) == ranked(INDEX, query)
    assert all("examples" not in stages for _, _, stages in ranked(INDEX, query))
    assert card_examples(INDEX, [], np.zeros((0, VECTORS.shape[1]))) is None


def test_an_example_like_the_step_lifts_its_tool_and_shows_why() -> None:
    query = "is it raining in Paris right now"
    second = ranked(INDEX, query)[1][0]  # the twins tie: the example decides
    examples = card_examples(INDEX, [second], np.stack([vector("is it raining in Paris")]))
    lifted = ranked(INDEX, query, examples=examples)
    assert lifted[0][0] == second and lifted[0][2]["examples"] > 0
    assert lifted[0][1] == pytest.approx(sum(lifted[0][2].values()), abs=1e-5)


def test_an_example_unlike_the_step_gives_nothing() -> None:
    query = "send an email to Ann"
    examples = card_examples(INDEX, ["weather_live"], np.stack([vector("rain in Oslo")]))
    answer = ranked(INDEX, query, examples=examples)
    assert [(n, s) for n, s, _ in answer] == [(n, s) for n, s, _ in ranked(INDEX, query)]
    assert all(stages["examples"] == 0 for _, _, stages in answer)


def test_examples_are_compared_on_the_multilingual_columns() -> None:
    """With an encoder's multilingual part declared, only those columns are kept and read:
    an example that agrees with the step there, and not in the other columns, still votes."""
    dim = VECTORS.shape[1]
    index = RouterIndex.build(DOCS, VECTORS, CONFIG, multilingual=(dim // 2, dim))
    assert example_columns(index) == slice(dim // 2, dim)
    query = "is it raining in Paris right now"
    row = vector(query).copy()
    row[: dim // 2] = -row[: dim // 2]  # the other columns disagree entirely
    second = ranked(index, query)[1][0]
    examples = card_examples(index, [second], row[None, :])
    assert examples is not None and examples.dim == dim - dim // 2
    lifted = ranked(index, query, examples=examples)
    assert lifted[0][0] == second and lifted[0][2]["examples"] > 0
