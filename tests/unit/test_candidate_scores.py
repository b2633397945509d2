"""``candidate_scores``: scoring only the tools that can reach the pool changes no answer."""

from __future__ import annotations

import numpy as np
import pytest

from app.routing import (
    NamespaceView,
    RouteOptions,
    Router,
    RouterConfig,
    RouterIndex,
    ToolDoc,
)
from app.routing import scores as scores_module
from app.routing.bm25 import bm25_scores
from app.routing.text import analyse

CONFIG = RouterConfig()
DIM = 24
N = 1500
WORDS = (
    "invoice",
    "shipment",
    "calendar",
    "weather",
    "playlist",
    "backup",
    "ticket",
    "recipe",
    "refund",
    "order",
    "parcel",
    "customer",
    "payment",
    "report",
    "city",
    "flight",
    "hotel",
    "translate",
    "email",
    "meeting",
)


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


RNG = np.random.default_rng(5)
MATRIX = unit(RNG.standard_normal((N, DIM)))


def _doc(i: int) -> ToolDoc:
    picked = [WORDS[j] for j in RNG.choice(len(WORDS), 3, replace=False)]
    required = ["order_id"] if i % 3 == 0 else (["city", "date"] if i % 3 == 1 else [])
    return ToolDoc(
        name=f"tool_{i}",
        summary="",
        description=f"Handles {' '.join(picked)} requests.",
        tags=(picked[0],),
        parameters={
            "type": "object",
            "properties": {name: {"type": "string"} for name in required},
            "required": required,
        },
        pinned=i in (7, 700),
    )


INDEX = RouterIndex.build([_doc(i) for i in range(N)], MATRIX, CONFIG)
QUERIES = (
    "refund the order A123",
    "weather in the city tomorrow",
    "book a flight. Then translate the meeting report",  # two asks: every tool is scored
    "zzz nothing matches this",  # no keyword hit: the pins count
    "send the invoice by email to ana@example.com",
    "translate the meeting report",
)


def _vector(query: str) -> np.ndarray:
    seed = sum(map(ord, query))
    return unit(MATRIX[seed % N] + 0.8 * np.random.default_rng(seed).standard_normal(DIM))[None]


def _answer(candidates: list) -> list[tuple[str, float, tuple[str, ...]]]:
    return [(c.name, c.score, c.missing_required) for c in candidates]


def _same(fast: list, full: list) -> None:
    assert [c.name for c in fast] == [c.name for c in full]
    for a, b in zip(fast, full, strict=True):
        assert a.missing_required == b.missing_required
        assert a.confidence == pytest.approx(b.confidence, abs=0.0015), a.name  # 3 decimals
        for stage, value in a.stages.items():  # the spread in two passes: float32 rounding
            assert value == pytest.approx(b.stages[stage], abs=2e-6), (a.name, stage)


class Noisy:
    """A ``Cosines`` that, like the int8 projection, returns approximate rows."""

    def __init__(self, noise: float) -> None:
        self.noise = noise
        self.rng = np.random.default_rng(0)
        self.approximate = lambda matrix: True

    def __call__(self, matrix: np.ndarray, unit_rows: np.ndarray) -> np.ndarray:
        exact = (matrix @ unit_rows.T).T
        return (exact + self.noise * self.rng.standard_normal(exact.shape)).astype(np.float32)


def _full_scoring(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scores_module, "candidate_scores", lambda *args: None)


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize(
    "options",
    [
        {"k": 3},
        {"k": 1},
        {"k": 10, "context": {"order_id": "A1"}},
        {"k": 60},  # deeper than the pool
        {"k": 5, "min_score": 0.8},
        {"k": 5, "tags": ["weather"]},
        {"k": 3, "tags": ["refund"]},
    ],
)
def test_the_same_answer_as_scoring_every_tool(
    query: str, options: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = NamespaceView(INDEX)
    fast = Router(CONFIG).route(view, query, _vector(query), RouteOptions(**options))
    with monkeypatch.context() as patched:
        _full_scoring(patched)
        full = Router(CONFIG).route(view, query, _vector(query), RouteOptions(**options))
    _same(fast, full)


def test_it_scores_a_few_candidates_not_every_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[scores_module.Scores] = []
    original = scores_module.candidate_scores

    def spy(*args: object) -> scores_module.Scores | None:
        scores = original(*args)  # type: ignore[arg-type]
        if scores is not None:
            seen.append(scores)
        return scores

    monkeypatch.setattr(scores_module, "candidate_scores", spy)
    query = "weather in the city tomorrow"
    Router(CONFIG).route(NamespaceView(INDEX), query, _vector(query), RouteOptions(k=3))
    (scores,) = seen
    touched = np.flatnonzero(bm25_scores(INDEX.keyword, analyse(query)))
    cosine = (MATRIX @ _vector(query)[0]).argsort()[-CONFIG.pool_size :]
    # the pinned tools (a route reads no usage prior)
    named = [INDEX.positions[n] for n in ("tool_7", "tool_700")]
    expected = set(touched) | set(cosine) | set(named)
    assert set(scores.tool_ids) == expected
    assert len(expected) < N
    # Control: several asks take the general path.
    seen.clear()
    query = QUERIES[2]
    Router(CONFIG).route(NamespaceView(INDEX), query, _vector(query), RouteOptions(k=3))
    assert not seen


def test_approximate_cosines_rank_as_exact_ones() -> None:
    raw_differs = 0
    for query in QUERIES:
        exact = Router(CONFIG).route(NamespaceView(INDEX), query, _vector(query), RouteOptions(k=5))
        fixed = Router(CONFIG, cosines=Noisy(0.01)).route(
            NamespaceView(INDEX), query, _vector(query), RouteOptions(k=5)
        )
        assert [c.name for c in fixed] == [c.name for c in exact], query
        # Control: the same noise, not declared approximate, is not fixed.
        noisy = Noisy(0.01)
        del noisy.approximate
        raw = Router(CONFIG, cosines=noisy).route(
            NamespaceView(INDEX), query, _vector(query), RouteOptions(k=5)
        )
        raw_differs += [c.name for c in raw] != [c.name for c in exact]
    assert raw_differs >= 2
