"""A covering answer: when a step is read as several parts, its ``k`` tools cover the parts
first — each part's best tool — and only then add a second tool for any one of them.

One ranked list for "look up tomorrow's weather in Lyon and add a reminder to pack an
umbrella" puts a second weather tool above the reminder tool more often than not: the whole
step's score is mostly the first part's. Each part has its own fused score of every tool
(``fusion.fuse_parts``). The answer opens with the tool one ranked list would put first
(the best by the whole step's score), then each other part's best tool (its leader), the
leaders in the order of their confidence as the tool for their part (``part_evidence.py``),
then the rest of the pool by the whole step's score (MMR-diversified, as a step of several
parts was before). A step's first tool is thus the same whether it is covered or not.

A candidate's confidence is the chance it is the tool of the part it serves, and it never
rises down the answer: each is at most the one above it (``confidence.non_increasing``,
which every answer passes through). After the
first, the leaders' order makes that hold among them by itself.

Pure: arrays in, positions out. docs/ROUTING.md ("Steps of several parts") measures it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.routing.diversity import mmr_order, top_indices

_EPS = 1e-9


def relative_rows(parts: np.ndarray) -> np.ndarray:
    """Each part's fused scores over that part's best (each part's best tool is 1.0, as
    ``fusion.relative_to_best`` makes the whole step's); a part whose best is not positive
    is left as it is."""
    best = parts.max(axis=1, keepdims=True) if parts.size else np.ones((parts.shape[0], 1))
    return parts / np.where(best > _EPS, best, 1.0)


def part_leaders(parts: np.ndarray, extra: np.ndarray, per_part: int) -> np.ndarray:
    """The ``per_part`` best positions of each part by ``relative_rows(parts) + extra``
    (unique, ascending): what a covering answer may need beyond the whole step's pool."""
    scores = relative_rows(parts) + extra[None, :]
    picks = [top_indices(row, per_part) for row in scores]
    return np.unique(np.concatenate(picks)) if picks else np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class Cover:
    """The answer's order (positions into the checked pool) and the part each serves."""

    order: np.ndarray
    part: np.ndarray


def leaders(part_scores: np.ndarray) -> np.ndarray:
    """Each part's best position by ``part_scores`` (``(parts, n)``)."""
    return np.argmax(part_scores, axis=1)


def cover(
    part_scores: np.ndarray,
    confidence: Sequence[float],
    final: np.ndarray,
    vectors: np.ndarray | None,
    k: int,
    lam: float,
) -> Cover:
    """``k`` positions: the best by ``final`` (the whole step's score), then each part's
    leader (``leaders(part_scores)``), most confident first (``confidence[s]``: part
    ``s``'s leader's, as the tool for that part; ties by ``final``), then the rest by
    ``final`` (MMR with ``lam`` over ``vectors`` when given, the leaders counting as picked
    already).

    A tool that leads several parts serves the one it is most confident for (the first
    tool, if it leads none, the part it scores best in); with fewer slots than leaders,
    the most confident leaders are kept."""
    n = final.size
    k = min(k, n)
    serves = np.argmax(part_scores, axis=0)
    part: dict[int, int] = {}
    for s, p in enumerate(leaders(part_scores).tolist()):
        if p not in part or confidence[s] > confidence[part[p]]:
            part[p] = s
    top = int(np.argmax(final))  # the one list's first stays first
    part.setdefault(top, int(serves[top]))
    others = sorted(set(part) - {top}, key=lambda p: (-confidence[part[p]], -final[p], p))
    chosen = [top, *others][:k]
    part = {p: part[p] for p in chosen}
    if len(chosen) < k:
        if vectors is not None and lam < 1.0:
            chosen = mmr_order(final, vectors, k, lam, first=chosen).tolist()
        else:
            rest = np.setdiff1d(np.arange(n), chosen)
            chosen += rest[top_indices(final[rest], k - len(chosen))].tolist()
    served = [part.get(p, int(serves[p])) for p in chosen]
    return Cover(np.asarray(chosen, dtype=np.int64), np.asarray(served, dtype=np.int64))
