"""Each tool's nearest neighbours by card embedding, kept up to date a few rows at a time.

A namespace's look-alikes (``lookalikes.py``) are read from these lists: for each tool, its
``m`` most similar tools at or above a floor. Building them compares every tool with every
other (``full_neighbours``, n² cosines, run in the background); after a write that changed
a few cards, ``update_neighbours`` compares only the changed rows with all rows, and the rows
that lost a neighbour from a full list, and reaches the lists a full build would.

The same lists whichever way they were reached needs the same cosines and the same order:
a cosine is summed in float64 and rounded to float32 once, so it does not depend on which
rows were multiplied together (BLAS sums a matrix product and a single row in different
orders, which moves the last float32 bit); ties are broken by column, ascending.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

ROW_BLOCK = 256  # rows per product: (256 × n) float32 cosines at a time
COLUMN_BLOCK = 4096  # columns converted to float64 at a time
# A float32 product of unit rows is within ~d · 2⁻²⁴ of the float64 one (≤ 2.5e-4 at 4,096
# dimensions): a column below the floor by more than this cannot reach it.
MARGIN = 1e-3


@dataclass(frozen=True, eq=False)
class Neighbours:
    """Row i's neighbours: ``cols[i]`` (positions, -1 for none) with ``sims[i]`` (cosines,
    -inf for none), most similar first, ties by position."""

    sims: np.ndarray  # (n, m) float32
    cols: np.ndarray  # (n, m) int64

    @classmethod
    def empty(cls, n: int, m: int) -> Neighbours:
        return cls(np.full((n, m), -np.inf, np.float32), np.full((n, m), -1, np.int64))


def cosines(unit: np.ndarray, rows: np.ndarray, floor: float = -np.inf) -> np.ndarray:
    """Cosines of the unit rows ``rows`` against every row: float64 sums, rounded once.

    With a ``floor``, only the columns where some row may reach it are summed so (a float32
    product finds them: its error on unit rows is far below ``MARGIN``); the others are
    ``-inf``. A write's few rows then cost one float32 product, not a float64 copy of the
    whole matrix.
    """
    left = unit[rows].astype(np.float64)
    if floor > -np.inf:
        rough = unit[rows] @ unit.T
        columns = np.flatnonzero((rough >= floor - MARGIN).any(axis=0))
        if columns.size < 0.5 * len(unit):  # else summing every column costs as much
            out = np.full((len(rows), len(unit)), -np.inf, dtype=np.float32)
            for start in range(0, columns.size, COLUMN_BLOCK):
                part = columns[start : start + COLUMN_BLOCK]
                out[:, part] = left @ unit[part].astype(np.float64).T
            return out
    out = np.empty((len(rows), len(unit)), dtype=np.float32)
    for start in range(0, len(unit), COLUMN_BLOCK):
        right = unit[start : start + COLUMN_BLOCK].astype(np.float64)
        out[:, start : start + len(right)] = left @ right.T
    return out


def top_m(sims: np.ndarray, cols: np.ndarray, m: int, floor: float) -> Neighbours:
    """Per row, the ``m`` best candidates (``cols`` ≥ 0, ``sims`` ≥ ``floor``), best first,
    ties by column; rows with fewer are padded."""
    out = Neighbours.empty(len(sims), m)
    ok = (cols >= 0) & (sims >= floor)
    if sims.shape[1] > m:  # only the candidates at or above each row's m-th best
        kth = -np.partition(-np.where(ok, sims, -np.inf), m - 1, axis=1)[:, m - 1]
        ok &= sims >= kth[:, None]
    rows, at = np.nonzero(ok)
    s, c = sims[rows, at], cols[rows, at]
    order = np.lexsort((c, -s, rows))
    rows, s, c = rows[order], s[order], c[order]
    rank = np.arange(len(rows)) - np.searchsorted(rows, rows, side="left")
    keep = rank < m
    out.sims[rows[keep], rank[keep]] = s[keep]
    out.cols[rows[keep], rank[keep]] = c[keep]
    return out


def _rows_against_all(unit: np.ndarray, rows: np.ndarray, m: int, floor: float) -> Neighbours:
    """The lists of ``rows`` (positions), computed against every row."""
    result = Neighbours.empty(len(rows), m)
    everyone = np.arange(len(unit), dtype=np.int64)
    for start in range(0, len(rows), ROW_BLOCK):
        block = rows[start : start + ROW_BLOCK]
        sims = cosines(unit, block, floor)
        sims[np.arange(len(block)), block] = -np.inf  # a tool is not its own look-alike
        found = top_m(sims, np.broadcast_to(everyone, sims.shape), m, floor)
        result.sims[start : start + len(block)] = found.sims
        result.cols[start : start + len(block)] = found.cols
    return result


def full_neighbours(unit: np.ndarray, m: int, floor: float) -> Neighbours:
    """Every row's list, from all n² cosines (in row blocks: never the n×n matrix)."""
    return _rows_against_all(unit, np.arange(len(unit), dtype=np.int64), m, floor)


def update_neighbours(
    old: Neighbours,
    old_names: Sequence[str],
    names: Sequence[str],
    unit: np.ndarray,
    changed: Collection[str],
    floor: float,
) -> Neighbours:
    """The lists of ``names`` (rows of ``unit``) from those of ``old_names``, where the cards
    ``changed`` are new or have new vectors and names missing from ``names`` are gone.

    A kept row keeps its list less the changed and gone tools, merged with its cosines to the
    changed rows. That is its exact list unless it lost a neighbour from a full list (the
    next best may be anyone): those rows, and the changed ones, are computed against all.
    Kept names must keep their relative order (the index lays names out sorted).
    """
    m = old.sims.shape[1]
    position = {name: i for i, name in enumerate(names)}
    old_to_new = np.array(
        [-1 if name in changed else position.get(name, -1) for name in old_names], np.int64
    )
    kept_old = np.flatnonzero(old_to_new >= 0)
    kept_new = old_to_new[kept_old]
    if np.any(np.diff(kept_new) <= 0):
        raise ValueError("the kept tools changed their order: compute the lists in full")
    fresh = np.array(sorted(position[n] for n in changed if n in position), np.int64)
    cols = old.cols[kept_old]
    mapped = np.where(cols >= 0, old_to_new[np.maximum(cols, 0)], -1)
    lost_from_full = ((cols >= 0) & (mapped < 0)).any(axis=1) & (cols >= 0).all(axis=1)
    carried_old, carried_new = kept_old[~lost_from_full], kept_new[~lost_from_full]
    result = Neighbours.empty(len(names), m)
    sims = np.where(mapped[~lost_from_full] >= 0, old.sims[carried_old], -np.inf)
    candidates = np.where(sims > -np.inf, mapped[~lost_from_full], -1)
    if fresh.size:
        to_fresh = cosines(unit, fresh, floor)[:, carried_new].T  # (carried, fresh)
        sims = np.concatenate([sims, to_fresh], axis=1)
        fresh_cols = np.broadcast_to(fresh, to_fresh.shape)
        candidates = np.concatenate([candidates, fresh_cols], axis=1)
    merged = top_m(sims.astype(np.float32), candidates, m, floor)
    result.sims[carried_new], result.cols[carried_new] = merged.sims, merged.cols
    redo = np.union1d(fresh, kept_new[lost_from_full])
    again = _rows_against_all(unit, redo, m, floor)
    result.sims[redo], result.cols[redo] = again.sims, again.cols
    return result


def ranked_pairs(lists: Neighbours, limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``limit`` best pairs (i < j) found in any list: cosines descending, then by
    position; a pair listed by both its tools counts once."""
    n, m = lists.cols.shape
    rows = np.repeat(np.arange(n, dtype=np.int64), m)
    cols, sims = lists.cols.ravel(), lists.sims.ravel()
    ok = cols >= 0
    a, b, s = np.minimum(rows, cols)[ok], np.maximum(rows, cols)[ok], sims[ok]
    key = a * max(n, 1) + b
    order = np.lexsort((-s, key))  # per pair, its highest cosine first
    first = np.ones(len(order), dtype=bool)
    first[1:] = key[order][1:] != key[order][:-1]
    a, b, s = a[order][first], b[order][first], s[order][first]
    best = np.lexsort((b, a, -s))[:limit]
    return s[best], a[best], b[best]
