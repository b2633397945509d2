"""Approximate cosine rows (app/embedding/cosines.py) become exact where they can decide a route."""

from __future__ import annotations

import numpy as np

from app.routing import NamespaceView, RouteOptions, Router, RouterConfig, RouterIndex, ToolDoc
from app.routing.signals import EXACT_TOP, decisive_tools, exact_where_it_counts

CONFIG = RouterConfig()
DIM = 32
N = 3000


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


RNG = np.random.default_rng(11)
MATRIX = unit(RNG.standard_normal((N, DIM)))
WORDS = ("invoice", "shipment", "calendar", "weather", "playlist", "backup", "ticket", "recipe")
DOCS = [
    ToolDoc(
        name=f"tool_{i}",
        summary=f"{WORDS[i % len(WORDS)]} helper {i}",
        description=f"Works on a {WORDS[i % len(WORDS)]} and a {WORDS[(i * 7) % len(WORDS)]}.",
        tags=(WORDS[i % len(WORDS)],),
    )
    for i in range(N)
]
INDEX = RouterIndex.build(DOCS, MATRIX, CONFIG)
QUERY = "find the invoice of the last shipment"
# Near a handful of tools, so several have close cosines that noise of 0.05 reorders.
QUERY_VEC = unit(MATRIX[:6].sum(axis=0) + 0.3 * RNG.standard_normal(DIM))[None]


class Noisy:
    """A ``Cosines`` that, like the int8 projection, returns approximate rows."""

    def __init__(self, noise: float, say_so: bool = True) -> None:
        self.noise = noise
        self.calls = 0
        if say_so:
            self.approximate = lambda matrix: True

    def __call__(self, matrix: np.ndarray, unit_rows: np.ndarray) -> np.ndarray:
        self.calls += 1
        rng = np.random.default_rng(self.calls)
        exact = (matrix @ unit_rows.T).T
        return (exact + self.noise * rng.standard_normal(exact.shape)).astype(np.float32)


def test_decisive_tools_are_the_best_by_either_signal_among_the_eligible() -> None:
    rows = np.arange(1000, dtype=np.float32)[None] / 1000  # tool i scores i / 1000
    keyword = np.zeros((1, 1000), dtype=np.float32)
    keyword[0, [3, 5, 7]] = [2.0, 1.0, 3.0]
    chosen = decisive_tools(rows, keyword, None, keyword_top=2)
    assert set(chosen) == set(range(1000 - EXACT_TOP, 1000)) | {3, 7}  # not 5: third best
    eligible = np.arange(0, 1000, 2)  # even tools only
    chosen = decisive_tools(rows, keyword, eligible, keyword_top=50)
    assert set(chosen) == set(range(1000 - 2 * EXACT_TOP, 1000, 2))  # 3, 5, 7 are odd
    segments = np.zeros((2, 1000), dtype=np.float32)  # a second ask's keywords count too
    segments[1, 11] = 5.0
    assert 11 in decisive_tools(rows, segments, None, keyword_top=1)


def test_only_the_decisive_cosines_change_and_they_become_exact() -> None:
    unit_rows = QUERY_VEC
    exact = (MATRIX @ unit_rows.T).T
    rows = Noisy(0.05)(MATRIX, unit_rows)
    before = rows.copy()
    keyword = np.zeros((1, N), dtype=np.float32)
    keyword[0, 2500] = 1.0  # a keyword hit far down the embedding ranking
    exact_where_it_counts(MATRIX, unit_rows, rows, keyword, None, keyword_top=50)
    changed = np.flatnonzero(rows[0] != before[0])
    chosen = decisive_tools(before, keyword, None, 50)
    assert set(changed) <= set(chosen) and 2500 in chosen
    np.testing.assert_allclose(rows[0, chosen], exact[0, chosen], atol=1e-6)
    assert len(changed) > EXACT_TOP // 2  # the noise really was there


def test_a_route_on_approximate_rows_ranks_as_on_exact_ones() -> None:
    exact = Router(CONFIG).route(NamespaceView(INDEX), QUERY, QUERY_VEC, RouteOptions(k=5))
    fixed = Router(CONFIG, cosines=Noisy(0.05)).route(
        NamespaceView(INDEX), QUERY, QUERY_VEC, RouteOptions(k=5)
    )
    assert [c.name for c in fixed] == [c.name for c in exact]
    for a, b in zip(fixed, exact, strict=True):  # the same cosines; the row's spread moved
        assert abs(a.stages["embedding"] - b.stages["embedding"]) < 0.05
    # Control: the same noise, not declared approximate, is not fixed and reorders the top.
    raw = Router(CONFIG, cosines=Noisy(0.05, say_so=False)).route(
        NamespaceView(INDEX), QUERY, QUERY_VEC, RouteOptions(k=5)
    )
    assert [c.name for c in raw] != [c.name for c in exact]


def test_with_tags_the_eligible_tools_get_the_exact_cosines() -> None:
    tags = ["weather"]  # every eighth tool
    exact = Router(CONFIG).route(
        NamespaceView(INDEX), QUERY, QUERY_VEC, RouteOptions(k=5, tags=tags)
    )
    fixed = Router(CONFIG, cosines=Noisy(0.05)).route(
        NamespaceView(INDEX), QUERY, QUERY_VEC, RouteOptions(k=5, tags=tags)
    )
    assert [c.name for c in fixed] == [c.name for c in exact]
