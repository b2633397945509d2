"""Optional diversity in the top-k: Maximal Marginal Relevance (Carbonell & Goldstein 1998).

Greedily picks ``argmax λ·score(d) − (1−λ)·max_{s∈picked} cos(d, s)`` among the candidates, so
near-duplicate tools (same job, different names) do not fill every slot. It only reorders:
scores stay as computed. ``λ = 1`` (the default) keeps the plain score order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def top_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest scores, best first (argpartition, then a stable argsort)."""
    k = min(k, scores.size)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    part = np.argpartition(-scores, k - 1)[:k] if k < scores.size else np.arange(scores.size)
    return part[np.argsort(-scores[part], kind="stable")]


def mmr_order(
    scores: np.ndarray, vectors: np.ndarray, k: int, lam: float, first: Sequence[int] = ()
) -> np.ndarray:
    """Positions (into ``scores``) of ``k`` candidates in MMR order; ``vectors`` unit rows.
    ``first``: positions picked before the others, in that order (``cover.py``)."""
    k = min(k, scores.size)
    if not first and (lam >= 1.0 or k <= 1 or vectors.shape[1] == 0):
        return top_indices(scores, k)
    similarity = vectors @ vectors.T
    redundancy = np.full(scores.size, -np.inf)
    available = np.ones(scores.size, dtype=bool)
    picked: list[int] = []
    for best in first[:k]:
        picked.append(int(best))
        available[best] = False
        redundancy = np.maximum(redundancy, similarity[best])
    for _ in range(k - len(picked)):
        penalty = np.where(np.isfinite(redundancy), redundancy, 0.0)
        value = np.where(available, lam * scores - (1.0 - lam) * penalty, -np.inf)
        best = int(np.argmax(value))
        picked.append(best)
        available[best] = False
        redundancy = np.maximum(redundancy, similarity[best])
    return np.asarray(picked, dtype=np.int64)
