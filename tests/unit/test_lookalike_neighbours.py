"""Nearest-neighbour lists of look-alikes: the full build against a brute-force reference,
and every incremental update against a full build of the same vectors."""

from __future__ import annotations

import numpy as np
import pytest

from app.tools.neighbours import (
    Neighbours,
    cosines,
    full_neighbours,
    ranked_pairs,
    top_m,
    update_neighbours,
)

M, FLOOR = 4, 0.2


def unit(rng: np.random.Generator, n: int, dim: int = 16) -> np.ndarray:
    """Clustered unit rows (so lists fill up), with exact duplicates (so cosines tie)."""
    centres = rng.normal(size=(3, dim))
    rows = centres[rng.integers(0, 3, n)] + 0.6 * rng.normal(size=(n, dim))
    rows[1::7] = rows[0::7][: len(rows[1::7])]  # duplicates: equal cosines to everyone
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows.astype(np.float32)


def reference(rows: np.ndarray, m: int, floor: float) -> list[list[int]]:
    """Each row's list by plain sorting: (-cosine, column), at or above the floor."""
    sims = (rows.astype(np.float64) @ rows.astype(np.float64).T).astype(np.float32)
    lists = []
    for i in range(len(rows)):
        ranked = sorted((-sims[i, j], j) for j in range(len(rows)) if j != i)
        lists.append([j for s, j in ranked if -s >= floor][:m])
    return lists


def as_lists(found: Neighbours) -> list[list[int]]:
    return [[int(c) for c in row if c >= 0] for row in found.cols]


def same(a: Neighbours, b: Neighbours) -> None:
    np.testing.assert_array_equal(a.cols, b.cols)
    np.testing.assert_array_equal(a.sims, b.sims)


def test_the_full_build_is_each_rows_best_by_plain_sorting() -> None:
    rows = unit(np.random.default_rng(1), 300)
    assert as_lists(full_neighbours(rows, M, FLOOR)) == reference(rows, M, FLOOR)


def test_top_m_breaks_ties_by_column_and_keeps_the_floor() -> None:
    sims = np.array([[0.5, 0.9, 0.5, 0.1, 0.5]], dtype=np.float32)
    cols = np.array([[4, 3, 2, 1, 0]])
    found = top_m(sims, cols, 3, floor=0.2)
    assert found.cols.tolist() == [[3, 0, 2]]
    assert top_m(sims, cols, 9, floor=0.2).cols.tolist() == [[3, 0, 2, 4, -1, -1, -1, -1, -1]]


def names_of(n: int, offset: int = 0) -> list[str]:
    return [f"tool_{i + offset:05d}" for i in range(n)]


@pytest.mark.parametrize("seed", range(6))
def test_an_update_reaches_the_lists_of_a_full_build(seed: int) -> None:
    """Writes of a few cards (new, re-embedded, deleted), one after another, each taken in
    by an update: after each, exactly the lists (and pairs) of a full build."""
    rng = np.random.default_rng(seed)
    pool = unit(rng, 400)
    names = names_of(250)
    vectors = {name: pool[i] for i, name in enumerate(names)}
    lists = full_neighbours(np.stack([vectors[n] for n in names]), M, FLOOR)
    spare = iter(range(250, 400))
    for _ in range(12):
        before = list(names)
        changed: set[str] = set()
        for name in rng.choice(before, size=rng.integers(1, 6), replace=False):
            vectors[name] = pool[next(spare)]  # a new description: a new vector
            changed.add(str(name))
        gone = {str(n) for n in rng.choice(before, size=rng.integers(0, 4), replace=False)}
        added = [f"new_{seed}_{next(spare):05d}" for _ in range(rng.integers(0, 4))]
        for name in added:
            vectors[name] = pool[rng.integers(0, 400)]  # may duplicate a row: ties
        changed = (changed - gone) | set(added)
        names = sorted((set(before) - gone) | set(added))
        rows = np.stack([vectors[n] for n in names])
        lists = update_neighbours(lists, before, names, rows, changed, FLOOR)
        full = full_neighbours(rows, M, FLOOR)
        same(lists, full)
        for got, want in zip(ranked_pairs(lists, 50), ranked_pairs(full, 50), strict=True):
            np.testing.assert_array_equal(got, want)


def test_an_update_refuses_kept_names_in_another_order() -> None:
    rows = unit(np.random.default_rng(3), 10)
    lists = full_neighbours(rows, M, FLOOR)
    with pytest.raises(ValueError):
        update_neighbours(lists, names_of(10), names_of(10)[::-1], rows[::-1], set(), FLOOR)


def test_pairs_count_once_best_first() -> None:
    rows = unit(np.random.default_rng(5), 120)
    sims, a, b = ranked_pairs(full_neighbours(rows, M, FLOOR), 10_000)
    assert (a < b).all() and len(set(zip(a.tolist(), b.tolist(), strict=True))) == len(a)
    assert (np.diff(sims) <= 0).all()
    exact = rows.astype(np.float64) @ rows.astype(np.float64).T
    np.testing.assert_allclose(sims, exact[a, b], atol=1e-6)


def test_cosines_with_a_floor_are_exact_at_and_above_it() -> None:
    """A floor sums only the columns a row may reach (``MARGIN``): every cosine at or above
    it is the unfiltered one, bit for bit; the others are below it."""
    rows = unit(np.random.default_rng(4), 500, dim=64)
    some = np.array([3, 77, 401])
    full = cosines(rows, some)
    for floor in (0.3, 0.6, 0.9):
        found = cosines(rows, some, floor)
        reached = full >= floor
        assert reached.any() and (~reached).any()
        np.testing.assert_array_equal(found[reached], full[reached])
        assert (found[~reached] < floor).all()
