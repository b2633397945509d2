"""Stages 1 and 2 of a route: each eligible tool's keyword and embedding contribution, and
the pinned tools' (the answer's ``prior`` stage).

BM25 of the whole step and of each of its parts (``parts.py``) and the cosines of their
vectors with every tool's are fused (``fusion.fuse_parts``) and rescaled so that the best
tool's fused score is 1.0; when the step matches no keyword, the pinned default tools get
``pinned_boost``. The usage prior is no part of it: since issue 41 it moves a route only as
a feature of a reranker the guard promoted (``reranker.py``). When the step or a card is in CJK
script and the encoder has a multilingual part, the weights are per step–card pair
(``language.py``). ``candidate_scores`` scores only the tools that can reach the pool, with
the same result, where that applies.

Arrays are aligned with ``Scores.tool_ids`` (rows of the ``RouterIndex``); a *position* is
an index into those arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from app.routing.fusion import (
    LanguageView,
    best_fused,
    fuse_parts,
    relative_to_best,
    sparse_zscore_stats,
    zscore_stats,
)
from app.routing.index import RouterIndex
from app.routing.language import all_visible, pair_visibility, step_share, with_lead
from app.routing.signals import (
    EXACT_TOP,
    RESCORED,
    Cosines,
    QueryRows,
    cosine_rows,
    exact_where_it_counts,
    multilingual_rows,
)
from app.routing.types import RouterConfig


@dataclass(frozen=True, slots=True)
class Scoring:
    """What stages 1–2 read for one route: the namespace's index, the analysed step and its
    vectors (one row per text; ``None``: no embedding), the eligible tools (``None``: all),
    the router's config, enabled stages and cosine product, and how deep the pool goes
    (``depth``)."""

    index: RouterIndex
    query: QueryRows
    vectors: np.ndarray | None
    eligible: np.ndarray | None
    config: RouterConfig
    enabled: frozenset[str]
    cosines: Cosines
    depth: int


@dataclass(frozen=True, slots=True)
class Scores:
    """Each scored tool's stage contributions (arrays aligned with ``tool_ids``), and the raw
    evidence behind them that the confidence reads: the whole step's BM25, the cosine rows
    (whole step, then each part; ``None`` without an embedding) and ``scale``, the best fused
    score the contributions were divided by (``fusion.best_fused``); for a step of several
    parts, each part's fused scores (``fusion.fuse_parts``, z-score units). ``votes``: the
    contributions of the namespace's gathered evidence (``votes.py``), by name, in order."""

    tool_ids: np.ndarray
    keyword: np.ndarray
    embedding: np.ndarray
    pinned: np.ndarray  # pinned_boost for a pinned tool when no keyword matched (``prior``)
    signal: bool
    bm25: np.ndarray
    cosine: np.ndarray | None
    scale: float
    parts: np.ndarray | None = None  # (parts, tools) each part's fused score; None: one part
    votes: tuple[tuple[str, np.ndarray], ...] = ()

    def total(self) -> np.ndarray:
        """Score before the rule check."""
        total = self.keyword + self.embedding + self.pinned
        for _, vote in self.votes:
            total = total + vote
        return total


def query_shares(scoring: Scoring) -> list[float] | None:
    """The CJK share of each of the query's texts when signals are weighed per pair
    (``language.py``): with the embedding stage on, z-score fusion and an encoder with a
    multilingual part, and CJK in the query or in some card; else ``None``."""
    index, config = scoring.index, scoring.config
    if index.multilingual is None or config.fusion != "zscore":
        return None
    if "embedding" not in scoring.enabled:
        return None
    shares = [step_share(text) for text in scoring.query.texts]
    return None if all_visible(shares, index.cjk_share) else shares


def language_view(
    index: RouterIndex,
    shares: list[float],
    unit: np.ndarray,
    select: slice | np.ndarray,
) -> LanguageView:
    """Each eligible pair's visibility, led by the multilingual cosine, and its rows."""
    multilingual = multilingual_rows(index, unit)[:, select]
    visibility = pair_visibility(shares, index.cjk_share[select])
    return LanguageView(with_lead(visibility, multilingual), multilingual)


def stage_scores(scoring: Scoring) -> Scores:
    """Keyword, embedding and pinned contributions of the eligible tools that can reach the
    top ``depth`` (all of them unless ``candidate_scores`` applies)."""
    shares = query_shares(scoring)
    if shares is None:
        fast = candidate_scores(scoring)
        if fast is not None:
            return fast
    index, query, config, enabled = scoring.index, scoring.query, scoring.config, scoring.enabled
    eligible = scoring.eligible
    select: slice | np.ndarray = slice(None) if eligible is None else eligible
    tool_ids = np.arange(len(index)) if eligible is None else eligible
    keyword_hit = bool(query.keyword[0, select].any())
    kw_rows = query.keyword[:, select] if "keyword" in enabled else None
    emb_rows, moments, languages = None, None, None
    vectors = scoring.vectors
    if "embedding" in enabled and vectors is not None and index.embeddings.shape[1] > 0:
        found = cosine_rows(index, vectors, len(query.texts), scoring.cosines)
        if found is not None:
            rows = found.rows
            if found.approximate:
                rows = np.array(rows, dtype=np.float32)  # ours to change
                exact_where_it_counts(
                    index.embeddings,
                    found.unit,
                    rows,
                    query.keyword if "keyword" in enabled else None,
                    eligible,
                    config.pool_size,
                )
            emb_rows = rows[:, select]
            # Estimated moments are those over every tool: a tag filter's subset has its own.
            moments = found.moments if eligible is None else None
            if shares is not None:
                languages = language_view(index, shares, found.unit, select)
    signal = (kw_rows is not None and keyword_hit) or emb_rows is not None
    keyword, embedding, scale = np.zeros(tool_ids.size), np.zeros(tool_ids.size), 1.0
    parts = None
    if signal:
        keyword, embedding, parts = fuse_parts(kw_rows, emb_rows, config, moments, languages)
        scale = best_fused(keyword, embedding)
        keyword, embedding = relative_to_best(keyword, embedding, scale)
    boost = pins(index, tool_ids, config) if "prior" in enabled and not keyword_hit else None
    boost = np.zeros(tool_ids.size) if boost is None else boost
    bm25 = query.keyword[0, select]
    return Scores(tool_ids, keyword, embedding, boost, signal, bm25, emb_rows, scale, parts)


def pins(index: RouterIndex, tool_ids: np.ndarray, config: RouterConfig) -> np.ndarray:
    """``pinned_boost`` for each of ``tool_ids`` that is pinned, else 0 (the answer's
    ``prior`` stage: what a step that matches no keyword gives the default tools)."""
    return np.where(np.isin(tool_ids, index.pinned), config.pinned_boost, 0.0)


def fast_path_applies(scoring: Scoring) -> bool:
    """Whether ``candidate_scores`` applies (see there)."""
    config, index = scoring.config, scoring.index
    return not (
        scoring.depth < 1
        or len(scoring.query.texts) != 1
        or config.fusion != "zscore"
        or not {"keyword", "embedding", "prior"} <= scoring.enabled
        or min(config.keyword_weight, config.embedding_weight) < 0
        or index.keyword.nonoccurrence is not None
        or scoring.vectors is None
        or index.embeddings.shape[1] == 0
    )


def candidate_scores(scoring: Scoring) -> Scores | None:
    """``stage_scores`` for the tools that can reach the top ``depth``, the others left out:
    the same top ``depth`` with the same scores, without normalising, adding and sorting
    every tool's. ``None`` where it does not apply (then every tool is scored).

    It applies to the common case (``stage_scores`` does not ask when signals are weighed
    per pair, ``language.py``): one query text, z-score fusion with both stages on and
    non-negative weights, BM25 without a non-occurrence constant. A tool that no query term
    touches then has the keyword contribution every such tool has, so it is outscored by
    each of the ``depth`` best by cosine unless it is one of them; the candidates are those,
    every keyword hit, and the pinned tools (the fallback's). The z-score's
    mean and spread are those of every eligible tool.

    Approximate cosines (a large namespace's int8 first pass, app/embedding/cosines.py) widen
    the cosine side to the ``EXACT_TOP`` best, and the candidates' best ``RESCORED`` by fused
    score (at least ``depth + 16``) get their exact cosine before the final fusion: the
    approximation picks which tools those are. The embedding's mean and spread are then the
    product's estimate of the exact ones (``CosineRows.moments``), or else the approximate
    row's; for a tag filter's subset, always the row's.
    """
    if not fast_path_applies(scoring):
        return None
    index, config, eligible, depth = scoring.index, scoring.config, scoring.eligible, scoring.depth
    assert scoring.vectors is not None
    found = cosine_rows(index, scoring.vectors, 1, scoring.cosines)
    if found is None:
        return None
    rows, unit, approximate = found.rows, found.unit, found.approximate
    select: slice | np.ndarray = slice(None) if eligible is None else eligible
    keyword, embedding = scoring.query.keyword[0, select], rows[0, select]
    chosen = keyword != 0  # the keyword hits
    keyword_hit = bool(chosen.any())
    every = np.arange(len(index)) if eligible is None else eligible
    boost = np.zeros(keyword.size) if keyword_hit else pins(index, every, config)
    wide = max(depth, EXACT_TOP) if approximate else depth
    if wide < keyword.size:
        chosen[np.argpartition(embedding, keyword.size - wide)[keyword.size - wide :]] = True
    else:
        chosen[:] = True
    if index.pinned.size:
        chosen |= np.isin(every, index.pinned)
    positions = np.flatnonzero(chosen)
    kw_mean, kw_scale = sparse_zscore_stats(keyword)
    if found.moments is not None and eligible is None:  # over every tool, not a subset
        emb_mean, emb_std = (float(x) for x in found.moments[0])
        emb_scale = emb_std if emb_std > 1e-9 else math.inf
    else:
        emb_mean, emb_scale = zscore_stats(embedding)
    kw_w, emb_w = config.keyword_weight, config.embedding_weight
    kw_part = (keyword[positions] - np.float32(kw_mean)) * np.float32(kw_w / kw_scale)
    emb_part = (embedding[positions] - np.float32(emb_mean)) * np.float32(emb_w / emb_scale)
    raw = embedding[positions]
    if approximate:
        fused = kw_part + emb_part + boost[positions]
        rescored = min(max(RESCORED, depth + 16), fused.size)
        best = np.argpartition(fused, fused.size - rescored)[fused.size - rescored :]
        tools = positions[best] if eligible is None else eligible[positions[best]]
        exact = (index.embeddings[tools] @ unit[0]).astype(np.float32)
        emb_part[best] = (exact - np.float32(emb_mean)) * np.float32(emb_w / emb_scale)
        raw[best] = exact
    scale = best_fused(kw_part, emb_part)
    kw_part, emb_part = relative_to_best(kw_part, emb_part, scale)
    tool_ids = positions if eligible is None else eligible[positions]
    return Scores(
        tool_ids, kw_part, emb_part, boost[positions], True, keyword[positions], raw[None], scale
    )
