"""Stage 2: put keyword and embedding scores on one scale and add them up.

Raw BM25 and cosine live on unrelated scales that also move with the query and the tool set,
so each score row is first normalised over the eligible tools, then weighted and summed
(CombSUM, Fox & Shaw 1994). Normalisers, picked by name:

* ``zscore`` — ``(x - mean) / std`` (Montague & Aslam 2001; the default). Measured best on
  both benchmarks: a single strong keyword hit stands out in proportion to how unusual it is.
* ``minmax`` — ``(x - min) / (max - min)``; one outlier squeezes everyone else.
* ``rrf`` — ``1 / (rrf_k + rank)`` (Cormack et al. 2009); throws the score margins away.

Multi-ask queries (see ``segment.py``) add, per tool, its best segment's fused score times
``segment_weight``; a tool serving any one ask well climbs even when the whole-query
score is dominated by another ask.
"""

from __future__ import annotations

import numpy as np

from app.routing.types import RouterConfig

FUSION_METHODS: tuple[str, ...] = ("zscore", "minmax", "rrf")
_EPS = 1e-9


def zscore(rows: np.ndarray) -> np.ndarray:
    """Row-wise standard score; a constant row becomes all zeros."""
    mean = rows.mean(axis=1, keepdims=True)
    std = rows.std(axis=1, keepdims=True)
    return np.where(std > _EPS, (rows - mean) / np.maximum(std, _EPS), 0.0)


def minmax(rows: np.ndarray) -> np.ndarray:
    """Row-wise rescaling to [0, 1]; a constant row becomes all zeros."""
    low = rows.min(axis=1, keepdims=True)
    span = rows.max(axis=1, keepdims=True) - low
    return np.where(span > _EPS, (rows - low) / np.maximum(span, _EPS), 0.0)


def rrf(rows: np.ndarray, k: float) -> np.ndarray:
    """Row-wise reciprocal rank ``1 / (k + rank)``, rank 1 = best (ties broken by position)."""
    ranks = np.empty(rows.shape, dtype=np.float64)
    order = np.argsort(-rows, axis=1, kind="stable")
    np.put_along_axis(ranks, order, np.arange(1, rows.shape[1] + 1, dtype=np.float64)[None], 1)
    return 1.0 / (k + ranks)


def normalise(rows: np.ndarray, method: str, rrf_k: float = 60.0) -> np.ndarray:
    """Normalise each row of scores with the method named ``method``; unknown → ValueError."""
    rows = np.asarray(rows, dtype=np.float64)
    if method == "zscore":
        return zscore(rows)
    if method == "minmax":
        return minmax(rows)
    if method == "rrf":
        return rrf(rows, rrf_k)
    raise ValueError(f"unknown fusion method {method!r}; choose one of {FUSION_METHODS}")


def weighted_rows(
    rows: np.ndarray | None, weight: float, shape: tuple[int, ...], config: RouterConfig
) -> np.ndarray:
    """``weight · normalise(rows)``, or zeros when the stage is off."""
    if rows is None or weight == 0.0:
        return np.zeros(shape)
    return weight * normalise(rows, config.fusion, config.rrf_k)


def fuse(
    keyword: np.ndarray | None, embedding: np.ndarray | None, config: RouterConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Per-tool keyword and embedding parts of the fused score.

    ``keyword`` and ``embedding`` are ``(1 + segments, tools)`` score rows (row 0 = whole query)
    or ``None`` for a stage that is off. Returns two ``(tools,)`` arrays whose sum ranks tools:
    ``part(row 0) + segment_weight · part(best segment)``, where each tool's best segment is
    the one with the highest keyword + embedding sum.
    """
    present = keyword if keyword is not None else embedding
    if present is None:
        raise ValueError("fuse needs at least one of keyword or embedding scores")
    kw = weighted_rows(keyword, config.keyword_weight, present.shape, config)
    emb = weighted_rows(embedding, config.embedding_weight, present.shape, config)
    if present.shape[0] == 1:
        return kw[0], emb[0]
    best = np.argmax(kw[1:] + emb[1:], axis=0)
    tools = np.arange(present.shape[1])
    beta = config.segment_weight
    return kw[0] + beta * kw[1:][best, tools], emb[0] + beta * emb[1:][best, tools]


def relative_to_best(keyword: np.ndarray, embedding: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Divide both parts by the best tool's fused score, so the best fused score is 1.0.

    This puts the fused score on a fixed scale whatever the tool set, which gives the absolute
    prior boost and missing-parameter penalty a stable meaning ("0.1 = a tenth of the best").
    """
    best = float((keyword + embedding).max()) if keyword.size else 0.0
    if best <= _EPS:
        return keyword, embedding
    return keyword / best, embedding / best
