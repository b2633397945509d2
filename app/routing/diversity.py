"""Optional diversity in the top-k: Maximal Marginal Relevance (Carbonell & Goldstein 1998).

Greedily picks ``argmax λ·score(d) − (1−λ)·max_{s∈picked} cos(d, s)`` among the candidates, so
near-duplicate tools (same job, different names) do not fill every slot. It only reorders:
scores stay as computed. ``λ = 1`` (the default) keeps the plain score order.
"""

from __future__ import annotations

import numpy as np


def top_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest scores, best first (argpartition, then a stable argsort)."""
    k = min(k, scores.size)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    part = np.argpartition(-scores, k - 1)[:k] if k < scores.size else np.arange(scores.size)
    return part[np.argsort(-scores[part], kind="stable")]


def mmr_order(scores: np.ndarray, vectors: np.ndarray, k: int, lam: float) -> np.ndarray:
    """Positions (into ``scores``) of ``k`` candidates in MMR order; ``vectors`` unit rows."""
    k = min(k, scores.size)
    if lam >= 1.0 or k <= 1 or vectors.shape[1] == 0:
        return top_indices(scores, k)
    similarity = vectors @ vectors.T
    redundancy = np.full(scores.size, -np.inf)
    available = np.ones(scores.size, dtype=bool)
    picked: list[int] = []
    for _ in range(k):
        penalty = np.where(np.isfinite(redundancy), redundancy, 0.0)
        value = np.where(available, lam * scores - (1.0 - lam) * penalty, -np.inf)
        best = int(np.argmax(value))
        picked.append(best)
        available[best] = False
        redundancy = np.maximum(redundancy, similarity[best])
    return np.asarray(picked, dtype=np.int64)
