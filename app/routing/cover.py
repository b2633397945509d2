"""A covering answer: when a step is read as several parts, its ``k`` tools cover the parts
first — each part's best tool — and only then add a second tool for any one of them.

One ranked list for "look up tomorrow's weather in Lyon and add a reminder to pack an
umbrella" puts a second weather tool above the reminder tool more often than not: the
whole step's score is mostly the first part's. Each part has its own fused score of every
tool (``fusion.fuse_parts``); the answer takes each part's best tool, then the rest of the
pool by the whole step's score (MMR-diversified as before).

Pure: arrays in, positions out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.routing.diversity import mmr_order, top_indices

_EPS = 1e-9


def relative_rows(parts: np.ndarray) -> np.ndarray:
    """Each part's fused scores over that part's best (so each part's best tool is 1.0,
    as ``fusion.relative_to_best`` does for the whole step); a part whose best is not
    positive is left as it is."""
    best = parts.max(axis=1, keepdims=True) if parts.size else np.ones((parts.shape[0], 1))
    return parts / np.where(best > _EPS, best, 1.0)


def part_leaders(parts: np.ndarray, extra: np.ndarray, per_part: int) -> np.ndarray:
    """The ``per_part`` best positions of each part by ``parts + extra`` (unique, any order):
    what a covering answer may need beyond the whole step's pool."""
    scores = relative_rows(parts) + extra[None, :]
    picks = [top_indices(row, per_part) for row in scores]
    return np.unique(np.concatenate(picks)) if picks else np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class Cover:
    """The answer's order (positions into the checked pool) and the part each serves."""

    order: np.ndarray
    part: np.ndarray


def cover(
    part_scores: np.ndarray,
    final: np.ndarray,
    vectors: np.ndarray | None,
    k: int,
    lam: float,
    rank: str = "final",
    rel: np.ndarray | None = None,
    floor: float = 0.0,
    rounds: bool = False,
) -> Cover:
    """``k`` positions: each part's best by ``part_scores`` (``(parts, n)``), in the order of
    ``final`` (the whole step's score, ``(n,)``), then the rest by ``final`` (MMR with
    ``lam`` over ``vectors`` when given, the parts' tools counting as picked already).

    Two parts with the same best tool are both served by it. With fewer than ``parts``
    slots, the parts' tools with the best ``final`` are kept."""
    n = final.size
    k = min(k, n)
    serves = np.argmax(part_scores, axis=0) if n else np.zeros(0, dtype=np.int64)
    leaders: dict[int, int] = {}
    strength: dict[int, float] = {}
    for index, row in enumerate(part_scores):
        best = int(np.argmax(row))
        value = float(rel[index, best]) if rel is not None else float(row[best])
        if floor > 0 and value < floor:
            continue
        leaders.setdefault(best, index)
        strength[best] = max(strength.get(best, -1e9), value)
    if rank == "step":
        chosen = sorted(leaders, key=lambda p: leaders[p])[:k]
    elif rank == "part":
        chosen = sorted(leaders, key=lambda p: (-strength[p], p))[:k]
    else:
        chosen = sorted(leaders, key=lambda p: (-final[p], p))[:k]
    part = {p: leaders[p] for p in chosen}
    rest = np.setdiff1d(np.arange(n), chosen)
    if rounds:
        ranked = [np.argsort(-row, kind="stable").tolist() for row in part_scores]
        while len(chosen) < k:
            picks: dict[int, int] = {}
            for s_, order in enumerate(ranked):
                nxt = next((p for p in order if p not in part and p not in picks), None)
                if nxt is not None:
                    picks[nxt] = s_
            if not picks:
                break
            for p in sorted(picks, key=lambda q: -final[q])[: k - len(chosen)]:
                part[p] = picks[p]
                chosen.append(p)
        rest = np.setdiff1d(np.arange(n), chosen)
    if k > len(chosen) and rest.size:
        more = k - len(chosen)
        if vectors is not None and lam < 1.0:
            picked = mmr_order(final, vectors, len(chosen) + more, lam, first=chosen)
            chosen = [int(p) for p in picked]
        else:
            chosen += rest[top_indices(final[rest], more)].tolist()
    order = np.asarray(chosen, dtype=np.int64)
    served = np.asarray([part.get(p, int(serves[p])) for p in chosen], dtype=np.int64)
    return Cover(order, served)
