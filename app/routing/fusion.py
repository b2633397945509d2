"""Stage 2: put keyword and embedding scores on one scale and add them up.

Raw BM25 and cosine live on unrelated scales that also move with the query and the tool set,
so each score row is first normalised over the eligible tools, then weighted and summed
(CombSUM, Fox & Shaw 1994). Normalisers, picked by name:

* ``zscore`` — ``(x - mean) / std`` (Montague & Aslam 2001; the default). Measured best on
  both benchmarks: a single strong keyword hit stands out in proportion to how unusual it is.
* ``minmax`` — ``(x - min) / (max - min)``; one outlier squeezes everyone else.
* ``rrf`` — ``1 / (rrf_k + rank)`` (Cormack et al. 2009); throws the score margins away.

A step read as several parts (see ``parts.py``) adds, per tool, its best part's fused score
times ``part_weight``; a tool serving any one part well climbs even when the whole step's
score is dominated by another part. ``fuse_parts`` also gives each part's own fused scores,
from which the answer covers the parts (``cover.py``).

Across languages (``language.py``) the weights are per step–card pair: each signal counts as
far as it can read the pair, the multilingual cosine takes what the others lose
(``language_parts``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from app.routing.language import Visibility
from app.routing.types import RouterConfig

FUSION_METHODS: tuple[str, ...] = ("zscore", "minmax", "rrf")

_EPS = 1e-9


def zscore(rows: np.ndarray, moments: np.ndarray | None = None) -> np.ndarray:
    """Row-wise standard score; a constant row becomes all zeros. ``moments``: each row's
    mean and spread, ``(r, 2)``, when known better than the row itself tells (the exact
    ones of an approximate row: app/embedding/cosines.py)."""
    if moments is None:
        mean = rows.mean(axis=1, keepdims=True)
        std = rows.std(axis=1, keepdims=True)
    else:
        mean = moments[:, :1].astype(rows.dtype)
        std = moments[:, 1:].astype(rows.dtype)
    return (rows - mean) / np.where(std > _EPS, std, np.inf).astype(rows.dtype)


def weighted_zscore(rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Row-wise standard score over a weighted population: each tool counts in the mean and
    spread by its weight (``(rows, tools)``, broadcastable), so tools a signal cannot read
    (weight 0) do not set its scale. Equal weights give ``zscore``; a row whose weights are
    all 0, or whose population is constant, becomes all zeros."""
    rows = np.asarray(rows, dtype=np.float64)
    weights = np.broadcast_to(np.asarray(weights, dtype=np.float64), rows.shape)
    total = weights.sum(axis=1, keepdims=True)
    safe = np.where(total > 0, total, 1.0)
    mean = (weights * rows).sum(axis=1, keepdims=True) / safe
    std = np.sqrt((weights * (rows - mean) ** 2).sum(axis=1, keepdims=True) / safe)
    ok = (total > 0) & (std > _EPS)
    return np.where(ok, (rows - mean) / np.where(ok, std, 1.0), 0.0)


def zscore_stats(row: np.ndarray) -> tuple[float, float]:
    """The mean and the divisor ``zscore`` uses for a 1-d row (``inf`` for a constant row),
    so that ``(row[some] - mean) / divisor`` are those tools' standard scores. Two passes,
    scalars as Python floats (an operation on numpy scalars costs many times more); equal to
    ``zscore``'s to float32 rounding."""
    if row.size == 0:
        return 0.0, math.inf
    mean = float(row.sum()) / row.size
    centred = row - np.float32(mean)
    std = math.sqrt(float(np.dot(centred, centred)) / row.size)
    return mean, std if std > _EPS else math.inf


def sparse_zscore_stats(row: np.ndarray) -> tuple[float, float]:
    """``zscore_stats`` of a row that is mostly zeros (BM25's): one pass for the sum and one
    BLAS dot for the sum of squares (the mean's square is small beside the mean square, so
    the difference loses nothing that matters)."""
    if row.size == 0:
        return 0.0, math.inf
    mean = float(row.sum()) / row.size
    variance = max(float(np.dot(row, row)) / row.size - mean * mean, 0.0)
    std = math.sqrt(variance)
    return mean, std if std > _EPS else math.inf


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


def normalise(
    rows: np.ndarray, method: str, rrf_k: float = 60.0, moments: np.ndarray | None = None
) -> np.ndarray:
    """Normalise each row of scores with the method named ``method``; unknown → ValueError.
    ``moments``: see ``zscore`` (the other methods do not use them)."""
    rows = np.asarray(rows, dtype=np.float32)
    if method == "zscore":
        return zscore(rows, moments)
    if method == "minmax":
        return minmax(rows)
    if method == "rrf":
        return rrf(rows, rrf_k)
    raise ValueError(f"unknown fusion method {method!r}; choose one of {FUSION_METHODS}")


def weighted_rows(
    rows: np.ndarray | None,
    weight: float,
    config: RouterConfig,
    moments: np.ndarray | None = None,
) -> np.ndarray | None:
    """``weight · normalise(rows)``, or ``None`` when the stage is off."""
    if rows is None or weight == 0.0:
        return None
    return weight * normalise(rows, config.fusion, config.rrf_k, moments)


@dataclass(frozen=True, slots=True)
class LanguageView:
    """What fusion needs to weigh signals per pair (``language.py``): the visibility of each
    pair, and the multilingual part's cosine rows (one per text, or one for all)."""

    visibility: Visibility
    multilingual: np.ndarray


def language_parts(
    keyword: np.ndarray | None,
    embedding: np.ndarray,
    view: LanguageView,
    config: RouterConfig,
) -> tuple[np.ndarray | None, np.ndarray]:
    """Per-pair keyword and embedding parts, ``(rows, tools)`` each.

    ``keyword = wk·v_k·z(K)``, each row z-scored over the tools weighted by how much of them
    BM25 can read; ``embedding = (we + wk·(1 − v_k))·(v_m·z(E) + (1 − v_m)·z(U))`` with ``E``
    the whole encoder's cosine (z-scored over the tools weighted by the English part's
    visibility) and ``U`` the multilingual part's: the weight a signal cannot use goes to the
    one that reads every pair, so each tool's weights add up to ``wk + we``. With the keyword
    stage off the embedding keeps its own weight. z-scores only (the router applies the rule
    with ``fusion = "zscore"``, the default).
    """
    vis = view.visibility
    wk, we = config.keyword_weight, config.embedding_weight
    shape = vis.keyword.shape
    mixed = weighted_zscore(np.broadcast_to(embedding, shape), vis.english_pair)
    multi = weighted_zscore(np.broadcast_to(view.multilingual, shape), np.ones(shape))
    dense = vis.english * mixed + (1.0 - vis.english) * multi
    if keyword is None or wk == 0.0:
        return None, (we * dense).astype(np.float32)
    kw = wk * vis.keyword * weighted_zscore(keyword, vis.keyword_pair)
    emb = (we + wk * (1.0 - vis.keyword)) * dense
    return kw.astype(np.float32), emb.astype(np.float32)


def part_rows(kw: np.ndarray | None, emb: np.ndarray | None) -> np.ndarray:
    """Each part's fused score of every tool, ``(parts, tools)``: its keyword and embedding
    rows (1…) added (a lone embedding row stands for every part)."""
    kw_part = kw[1:] if kw is not None else None
    emb_part = None if emb is None else (emb[1:] if emb.shape[0] > 1 else emb[0])
    total = (0.0 if kw_part is None else kw_part) + (0.0 if emb_part is None else emb_part)
    return np.atleast_2d(np.asarray(total, dtype=np.float32))


def best_part(
    kw: np.ndarray | None, emb: np.ndarray | None, parts: np.ndarray
) -> tuple[np.ndarray | float, np.ndarray | float]:
    """Each tool's keyword and embedding parts in its best part (``parts``: ``part_rows``)."""
    best = np.argmax(parts, axis=0)[None]

    def pick(rows: np.ndarray | None) -> np.ndarray | float:
        if rows is None:
            return 0.0
        rows = rows[1:] if rows.shape[0] > 1 else rows
        return rows[0] if rows.shape[0] == 1 else np.take_along_axis(rows, best, axis=0)[0]

    return pick(kw), pick(emb)


def fuse(
    keyword: np.ndarray | None,
    embedding: np.ndarray | None,
    config: RouterConfig,
    embedding_moments: np.ndarray | None = None,
    languages: LanguageView | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-tool keyword and embedding parts of the fused score (``fuse_parts`` less the
    parts' own rows)."""
    kw, emb, _ = fuse_parts(keyword, embedding, config, embedding_moments, languages)
    return kw, emb


def fuse_parts(
    keyword: np.ndarray | None,
    embedding: np.ndarray | None,
    config: RouterConfig,
    embedding_moments: np.ndarray | None = None,
    languages: LanguageView | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Per-tool keyword and embedding parts of the fused score, and each part's own.

    ``keyword`` is ``(1 + parts, tools)`` BM25 rows (row 0 = whole step), ``embedding``
    the same shape or a single whole-step row; ``None`` for a stage that is off. Returns two
    ``(tools,)`` arrays whose sum ranks tools: ``part(row 0) + part_weight · part(best
    part)``, each tool's best part being the one with the highest keyword + embedding, and
    the ``(parts, tools)`` fused scores of each part (``part_rows``; ``None`` for a step of
    one part). ``languages``: weigh each pair by what each signal can read
    (``language_parts``; needs the embedding rows).
    """
    present = keyword if keyword is not None else embedding
    if present is None:
        raise ValueError("fuse needs at least one of keyword or embedding scores")
    kw: np.ndarray | None
    emb: np.ndarray | None
    if languages is not None and embedding is not None:
        kw, emb = language_parts(keyword, embedding, languages, config)
    else:
        kw = weighted_rows(keyword, config.keyword_weight, config)
        emb = weighted_rows(embedding, config.embedding_weight, config, embedding_moments)
    zeros = np.zeros(present.shape[1], dtype=np.float32)
    kw_whole = zeros if kw is None else kw[0]
    emb_whole = zeros if emb is None else emb[0]
    if max(0 if x is None else x.shape[0] for x in (kw, emb)) < 2:
        return kw_whole, emb_whole, None
    parts = part_rows(kw, emb)
    kw_best, emb_best = best_part(kw, emb, parts)
    beta = config.part_weight
    return kw_whole + beta * kw_best, emb_whole + beta * emb_best, parts


def best_fused(keyword: np.ndarray, embedding: np.ndarray) -> float:
    """What ``relative_to_best`` divides by: the best tool's fused score, or 1.0 when it is
    not positive (then nothing is divided). Fused scores are ``relative parts × this``."""
    best = float((keyword + embedding).max()) if keyword.size else 0.0
    return best if best > _EPS else 1.0


def relative_to_best(
    keyword: np.ndarray, embedding: np.ndarray, best: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Divide both parts by the best tool's fused score, so the best fused score is 1.0.

    This puts the fused score on a fixed scale whatever the tool set, which gives the absolute
    prior boost and missing-parameter penalty a stable meaning ("0.1 = a tenth of the best").
    ``best``: ``best_fused(keyword, embedding)``, when the caller has it already.
    """
    best = best_fused(keyword, embedding) if best is None else best
    if best == 1.0:
        return keyword, embedding
    return keyword / best, embedding / best
