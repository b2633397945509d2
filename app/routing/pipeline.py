"""``route``: the three stages end to end, for one query against one :class:`RouterIndex`.

1. keyword — BM25 of the whole query and of each of its asks (``segment.py``) over all tools;
2. embedding — cosine of the query (and ask) vectors with every tool's vector; both fused by
   ``fusion.fuse`` and rescaled so the best tool's fused score is 1.0; plus the usage prior;
   the top ``pool_size`` tools go on;
3. penalty — ``-missing_param_penalty`` per required parameter that neither the query nor the
   context can supply (``penalty.py``); then the top ``k`` (optionally MMR-diversified).

Each candidate's ``stages`` holds these four additive parts; they sum to its ``score``.
When the query matches no keyword, pinned default tools get ``pinned_boost`` in their prior
part; when neither keywords nor an embedding give any signal, the answer is the pinned default
tools, then the most used ones (by ``prior``). No candidate ever scores below ``min_score``:
when nothing reaches it, the answer is empty (fewer than k, as asked).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.routing.bm25 import matched_in
from app.routing.diversity import mmr_order, top_indices
from app.routing.fusion import fuse, relative_to_best, sparse_zscore_stats, zscore_stats
from app.routing.index import RouterIndex
from app.routing.penalty import (
    NOTHING_MISSING,
    QueryEvidence,
    Verdict,
    penalty,
    query_evidence,
    verdict,
)
from app.routing.signals import (
    EXACT_TOP,
    RESCORED,
    Cosines,
    QueryRows,
    analyse_query,
    cosine_rows,
    exact_where_it_counts,
    gemv_rows,
    prior_part,
)
from app.routing.types import ALL_STAGES, Candidate, RouterConfig

# Scores are shown rounded to this many decimals (app/route/service.py); min_score is
# compared with what the caller was shown, not with the float32 underneath.
SCORE_DECIMALS = 6


@dataclass(frozen=True, slots=True)
class RuleCheck:
    """Stage 3 for one query, analysed once: its evidence and each tool's matched terms."""

    evidence: QueryEvidence
    touched: np.ndarray  # the tools the query's terms touch, once per term (bm25_row)
    distinct: int  # distinct query terms

    @classmethod
    def of(
        cls, index: RouterIndex, query: QueryRows, context: Mapping[str, Any] | None
    ) -> RuleCheck:
        return cls(
            query_evidence(query.text, query.tokens, context),
            query.touched,
            len(set(query.tokens)),
        )

    def penalties(
        self, index: RouterIndex, tools: np.ndarray, config: RouterConfig
    ) -> tuple[np.ndarray, list[Verdict]]:
        """Penalty part and rule-check verdict of each tool in ``tools``."""
        found = []
        for tool in tools.tolist():
            # A query word the card does not explain supplies a plain string parameter: the
            # terms the card matches are counted only when that can change the answer.
            def unexplained(tool: int = tool) -> bool:
                return bool(matched_in(self.touched, np.array([tool]))[0] < self.distinct)

            found.append(verdict(index.rules[tool], self.evidence, index.value_check, unexplained))
        part = [
            penalty(
                v.missing,
                config.missing_param_penalty,
                config.max_penalised_params,
                v.mentioned,
                config.mention_softening,
            )
            for v in found
        ]
        return np.asarray(part, dtype=np.float64), found


def check_stages(stages: frozenset[str]) -> None:
    """Unknown stage names → ValueError."""
    unknown = set(stages) - ALL_STAGES
    if unknown:
        raise ValueError(f"unknown stages {sorted(unknown)}; choose from {sorted(ALL_STAGES)}")


@dataclass(frozen=True, slots=True)
class Scores:
    """Stage 1–2 parts for the eligible tools ``cols`` (all arrays aligned with ``cols``)."""

    cols: np.ndarray
    keyword: np.ndarray
    embedding: np.ndarray
    prior: np.ndarray
    signal: bool

    def total(self) -> np.ndarray:
        """Score before the rule check."""
        return self.keyword + self.embedding + self.prior


def stage_scores(
    index: RouterIndex,
    query: QueryRows,
    query_vec: np.ndarray | None,
    eligible: np.ndarray | None,
    prior: Mapping[str, float] | None,
    config: RouterConfig,
    stages: frozenset[str],
    cosines: Cosines = gemv_rows,
    depth: int = 0,
) -> Scores:
    """Keyword, embedding and prior parts of the eligible tools (``None`` = all tools) that
    can reach the top ``depth`` (all of them unless ``candidate_scores`` applies)."""
    fast = candidate_scores(
        index, query, query_vec, eligible, prior, config, stages, cosines, depth
    )
    if fast is not None:
        return fast
    select: slice | np.ndarray = slice(None) if eligible is None else eligible
    cols = np.arange(len(index)) if eligible is None else eligible
    keyword_hit = bool(query.keyword[0, select].any())
    kw_rows = query.keyword[:, select] if "keyword" in stages else None
    emb_rows, moments = None, None
    if "embedding" in stages and query_vec is not None and index.embeddings.shape[1] > 0:
        found = cosine_rows(index, query_vec, len(query.texts), cosines)
        if found is not None:
            rows = found.rows
            if found.approximate:
                rows = np.array(rows, dtype=np.float32)  # ours to change
                exact_where_it_counts(
                    index.embeddings,
                    found.unit,
                    rows,
                    query.keyword if "keyword" in stages else None,
                    eligible,
                    config.pool_size,
                )
            emb_rows = rows[:, select]
            # Estimated moments are those over every tool: a tag filter's subset has its own.
            moments = found.moments if eligible is None else None
    signal = (kw_rows is not None and keyword_hit) or emb_rows is not None
    keyword, embedding = np.zeros(cols.size), np.zeros(cols.size)
    if signal:
        keyword, embedding = relative_to_best(*fuse(kw_rows, emb_rows, config, moments))
    boost = np.zeros(cols.size)
    if "prior" in stages:
        boost = prior_part(index, prior, config)[select]
        if not keyword_hit and index.pinned.size:
            boost = boost + config.pinned_boost * np.isin(cols, index.pinned)
    return Scores(cols, keyword, embedding, boost, signal)


def candidate_scores(
    index: RouterIndex,
    query: QueryRows,
    query_vec: np.ndarray | None,
    eligible: np.ndarray | None,
    prior: Mapping[str, float] | None,
    config: RouterConfig,
    stages: frozenset[str],
    cosines: Cosines,
    depth: int,
) -> Scores | None:
    """``stage_scores`` for the tools that can reach the top ``depth``, the others left out:
    the same top ``depth`` with the same scores, without normalising, adding and sorting
    every tool's. ``None`` where it does not apply (then every tool is scored).

    It applies to the common case: one query text, z-score fusion with both stages on and
    non-negative weights, BM25 without a non-occurrence constant. A tool that no query term
    touches then has the keyword part every such tool has, so it is outscored by each of the
    ``depth`` best by cosine unless it is one of them; the candidates are those, every
    keyword hit, and the tools with a prior or a pin (the fallback's). The z-score's mean
    and spread are those of every eligible tool.

    Approximate cosines (a large namespace's int8 first pass, app/embedding/cosines.py) widen the
    cosine side to the ``EXACT_TOP`` best, and the candidates' best ``RESCORED`` by fused
    score (at least ``depth + 16``) get their exact cosine before the final fusion: the
    approximation picks which tools those are. The embedding's mean and spread are then the
    product's estimate of the exact ones (``CosineRows.moments``), or else the approximate
    row's; for a tag filter's subset, always the row's.
    """
    if (
        depth < 1
        or len(query.texts) != 1
        or config.fusion != "zscore"
        or not {"keyword", "embedding", "prior"} <= stages
        or min(config.keyword_weight, config.embedding_weight) < 0
        or index.keyword.nonoccurrence is not None
        or query_vec is None
        or index.embeddings.shape[1] == 0
    ):
        return None
    found = cosine_rows(index, query_vec, 1, cosines)
    if found is None:
        return None
    rows, unit, approximate = found.rows, found.unit, found.approximate
    select: slice | np.ndarray = slice(None) if eligible is None else eligible
    keyword, embedding = query.keyword[0, select], rows[0, select]
    chosen = keyword != 0  # the keyword hits
    keyword_hit = bool(chosen.any())
    boost = prior_part(index, prior, config)[select] if prior else np.zeros(keyword.size)
    if not keyword_hit and index.pinned.size:
        cols = np.arange(len(index)) if eligible is None else eligible
        boost = boost + config.pinned_boost * np.isin(cols, index.pinned)
    wide = max(depth, EXACT_TOP) if approximate else depth
    if wide < keyword.size:
        chosen[np.argpartition(embedding, keyword.size - wide)[keyword.size - wide :]] = True
    else:
        chosen[:] = True
    if prior or not keyword_hit:
        chosen |= boost > 0
    if index.pinned.size:
        chosen |= np.isin(np.arange(len(index)) if eligible is None else eligible, index.pinned)
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
    if approximate:
        fused = kw_part + emb_part + boost[positions]
        rescored = min(max(RESCORED, depth + 16), fused.size)
        best = np.argpartition(fused, fused.size - rescored)[fused.size - rescored :]
        tools = positions[best] if eligible is None else eligible[positions[best]]
        exact = (index.embeddings[tools] @ unit[0]).astype(np.float32)
        emb_part[best] = (exact - np.float32(emb_mean)) * np.float32(emb_w / emb_scale)
    kw_part, emb_part = relative_to_best(kw_part, emb_part)
    cols = positions if eligible is None else eligible[positions]
    return Scores(cols, kw_part, emb_part, boost[positions], True)


def fallback_positions(index: RouterIndex, scores: Scores, k: int) -> np.ndarray:
    """Positions of the pinned tools, then of the most used ones, best prior first."""
    pinned = np.isin(scores.cols, index.pinned)
    keep = np.flatnonzero(pinned | (scores.prior > 0))
    order = np.lexsort((keep, -scores.prior[keep], ~pinned[keep]))
    return keep[order][:k]


def candidates(
    index: RouterIndex,
    scores: Scores,
    positions: np.ndarray,
    pen: np.ndarray,
    verdicts: Sequence[Verdict],
) -> list[Candidate]:
    """One :class:`Candidate` per position, in the given order."""
    out = []
    for j, p in enumerate(positions):
        parts = {
            "keyword": float(scores.keyword[p]),
            "embedding": float(scores.embedding[p]),
            "prior": float(scores.prior[p]),
            "penalty": float(pen[j]),
        }
        name = index.names[scores.cols[p]]
        found = verdicts[j]
        out.append(
            Candidate(name, sum(parts.values()), parts, found.missing, found.invalid_context)
        )
    return out


def route(
    index: RouterIndex,
    query: str,
    query_vec: np.ndarray | None,
    *,
    k: int = 3,
    context: Mapping[str, Any] | None = None,
    tags: Sequence[str] | None = None,
    min_score: float | None = None,
    prior: Mapping[str, float] | None = None,
    config: RouterConfig,
    stages: frozenset[str] = ALL_STAGES,
    cosines: Cosines = gemv_rows,
    texts: Sequence[str] | None = None,
) -> list[Candidate]:
    """The top-``k`` tools for ``query``, each with its score explained stage by stage.

    ``cosines`` computes the embedding stage's matrix product; the default is plain numpy,
    a service passes one that shares the product with concurrent routes (app/embedding/cosines.py).
    ``texts``: ``query_texts(query)``, when the caller has segmented the query already.
    """
    check_stages(stages)
    eligible = index.eligible(tags)
    if k <= 0 or len(index) == 0 or (eligible is not None and eligible.size == 0):
        return []
    if min_score is not None:  # a score shown as 0.9 (0.89999998 in float32) passes 0.9
        min_score -= 0.5 * 10.0**-SCORE_DECIMALS
    rows = analyse_query(index, query, texts)
    depth = max(config.pool_size, k)
    scores = stage_scores(index, rows, query_vec, eligible, prior, config, stages, cosines, depth)
    total = scores.total()
    if scores.signal:
        pool = top_indices(total, depth)
    else:  # nothing to go on: the pinned defaults and the most used tools only
        pool = top_indices(total, k)
        pool = pool[total[pool] > 0]
    diversify = len(rows.texts) > 1 or not config.mmr_multi_ask_only
    lam = config.mmr_lambda if diversify else 1.0
    # Plain top-k (no MMR): the pool, best first, is checked only as far as it can matter.
    until = (k, min_score) if lam >= 1.0 or k <= 1 else None
    rules = RuleCheck.of(index, rows, context) if "penalty" in stages else None
    pool, pen, verdicts = rule_check(index, scores, pool, rules, config, stages, until)
    final = total[pool] + pen
    keep = np.flatnonzero(final >= min_score) if min_score is not None else np.arange(pool.size)
    if keep.size == 0:
        pool = fallback_positions(index, scores, k)
        pool, pen, verdicts = rule_check(index, scores, pool, rules, config, stages)
        fallback = candidates(index, scores, pool, pen, verdicts)
        return [c for c in fallback if min_score is None or c.score >= min_score]
    if lam >= 1.0 or k <= 1:  # plain top k: no vectors to read
        order = keep[top_indices(final[keep], k)]
    else:
        order = keep[mmr_order(final[keep], index.embeddings[scores.cols[pool[keep]]], k, lam)]
    return candidates(index, scores, pool[order], pen[order], [verdicts[i] for i in order])


def settled(final: np.ndarray, next_total: float, k: int, min_score: float | None) -> bool:
    """Whether a tool whose score before the rule check is ``next_total`` (or less) can no
    longer enter the top ``k`` of the checked scores ``final``: a penalty only lowers a score."""
    if min_score is not None:
        if next_total < min_score:
            return True
        final = final[final >= min_score]
    if final.size < k:
        return False
    return float(np.partition(final, final.size - k)[final.size - k]) >= next_total


def rule_check(
    index: RouterIndex,
    scores: Scores,
    positions: np.ndarray,
    rules: RuleCheck | None,
    config: RouterConfig,
    stages: frozenset[str],
    until: tuple[int, float | None] | None = None,
) -> tuple[np.ndarray, np.ndarray, list[Verdict]]:
    """The positions checked, their penalty parts and rule-check verdicts (zeros and nothing
    missing when the stage is off).

    With ``until = (k, min_score)`` and ``positions`` best first (by score before the rule
    check), they are checked a few at a time until no later one can reach the top ``k``
    (``settled``); the rest are left out. The top ``k`` is the same as checking them all.
    """
    if rules is None or "penalty" not in stages or positions.size == 0:
        return positions, np.zeros(positions.size), [NOTHING_MISSING for _ in positions]
    if until is None:
        pen, every = rules.penalties(index, scores.cols[positions], config)
        return positions, pen, every
    k, min_score = until
    total = scores.keyword[positions] + scores.embedding[positions] + scores.prior[positions]
    parts: list[np.ndarray] = []
    verdicts: list[Verdict] = []
    done = 0
    while done < positions.size:
        chunk = positions[done : done + k + 2]
        part, found = rules.penalties(index, scores.cols[chunk], config)
        parts.append(part)
        verdicts.extend(found)
        done += chunk.size
        pen = np.concatenate(parts)
        if done < positions.size and settled(total[:done] + pen, total[done], k, min_score):
            break
    return positions[:done], np.concatenate(parts), verdicts
