"""``route``: the three stages end to end, for one query against one :class:`RouterIndex`.

1. keyword — BM25 of the whole step and of each of its parts (``parts.py``) over all tools;
2. embedding — cosine of the step (and part) vectors with every tool's vector; both fused by
   ``fusion.fuse`` and rescaled so the best tool's fused score is 1.0; plus the usage prior;
   the top ``pool_size`` tools go on. When the step or a card is in CJK script and the
   encoder has a multilingual part, the weights are per step–card pair (``language.py``);
3. penalty — ``-missing_param_penalty`` per required parameter that neither the query nor the
   context can supply (``penalty.py``); then the top ``k`` (optionally MMR-diversified). A
   step read as several parts gets a covering answer (``cover.py``): each part's best tool
   first, then the rest.

Each candidate's ``stages`` holds these four additive parts; they sum to its ``score``.
When the query matches no keyword, pinned default tools get ``pinned_boost`` in their prior
part; when neither keywords nor an embedding give any signal, the answer is the pinned default
tools, then the most used ones (by ``prior``). No candidate ever scores below ``min_score``:
when nothing reaches it, the answer is empty (fewer than k, as asked).

Each candidate also carries a ``confidence`` read from the raw evidence (``confidence.py``):
the scores say which tool is best, the confidence whether to trust it. Candidates below
``min_confidence`` are left out, so "nothing here fits" is an empty answer.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.routing.adapter import Learned
from app.routing.bm25 import matched_in
from app.routing.calibration import Calibration
from app.routing.confidence import ConfidenceModel, Evidence, non_increasing
from app.routing.confidence_fit import CONFIDENCE_MODEL
from app.routing.cover import (
    Cover,
    cover,
    leaders,
    part_leaders,
    relative_rows,
)
from app.routing.diversity import mmr_order, top_indices
from app.routing.examples import example_dim, examples_part
from app.routing.fusion import (
    LanguageView,
    best_fused,
    fuse_parts,
    relative_to_best,
    sparse_zscore_stats,
    zscore_stats,
)
from app.routing.index import RouterIndex
from app.routing.language import all_visible, cjk_share, pair_visibility, with_lead
from app.routing.memory import QueryMemory, memory_part
from app.routing.part_evidence import part_evidence
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
    multilingual_rows,
    prior_part,
    unit_rows,
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
    """Stage 1–2 parts for the eligible tools ``cols`` (all arrays aligned with ``cols``),
    and the raw evidence behind them that the confidence reads: the whole step's BM25, the
    cosine rows (whole step, then each part; ``None`` without an embedding) and ``scale``,
    the best fused score the parts were divided by (``fusion.best_fused``); for a step of
    several parts, each part's fused scores (``fusion.fuse_parts``, z-score units)."""

    cols: np.ndarray
    keyword: np.ndarray
    embedding: np.ndarray
    prior: np.ndarray
    signal: bool
    bm25: np.ndarray
    cosine: np.ndarray | None
    scale: float
    memory: np.ndarray | None = None  # query memory's part; None: the namespace has none
    examples: np.ndarray | None = None  # card examples' part; None: no card has any
    parts: np.ndarray | None = None  # (parts, cols) each part's fused score; None: one part
    learned: np.ndarray | None = None  # the learned adapter's part; None: no adapter serves

    def total(self) -> np.ndarray:
        """Score before the rule check."""
        total = self.keyword + self.embedding + self.prior
        if self.memory is not None:
            total = total + self.memory
        if self.learned is not None:
            total = total + self.learned
        return total if self.examples is None else total + self.examples


def embedding_slope(scores: Scores, at: np.ndarray) -> float:
    """The embedding part per unit of the whole step's cosine, over the tools ``at`` (the
    fusion's z-score and division by the best make it linear in the cosine); 0 without one."""
    if scores.cosine is None or at.size < 2:
        return 0.0
    cos = scores.cosine[0, at].astype(np.float64)
    emb = scores.embedding[at].astype(np.float64)
    spread = float(np.square(cos - cos.mean()).sum())
    if spread <= 1e-12:
        return 0.0
    return max(float(((cos - cos.mean()) * (emb - emb.mean())).sum() / spread), 0.0)


def with_learned(
    index: RouterIndex,
    scores: Scores,
    learned: Learned | None,
    query_vec: np.ndarray | None,
    stages: frozenset[str],
) -> Scores:
    """``scores`` with the learned adapter's part (``adapter.py``) when one serves the
    namespace and the embedding stage is on; unchanged (no part at all) otherwise. Only the
    best ``learned.pool`` tools by score that it may move in this key's routes get a part
    (``Learned.movable``)."""
    if learned is None or "embedding" not in stages or query_vec is None:
        return scores
    part = np.zeros(scores.cols.size, dtype=np.float32)
    dim = index.embeddings.shape[1]
    unit = None if learned.adapter.dim != dim else unit_rows(query_vec, 1, dim)
    if scores.signal and unit is not None:
        pool = top_indices(scores.total(), learned.pool)
        cols = scores.cols[pool]
        reported = learned.movable(index.names)[cols]
        if reported.any():
            weight = learned.weight
            if learned.relative:
                weight *= embedding_slope(scores, pool)
            part[pool] = learned.adapter.learned_part(
                unit[0], index.embeddings[cols], reported, weight
            )
    return dataclasses.replace(scores, learned=part)


def with_examples(
    index: RouterIndex,
    scores: Scores,
    examples: QueryMemory | None,
    query_vec: np.ndarray | None,
    config: RouterConfig,
    stages: frozenset[str],
) -> Scores:
    """``scores`` with the card examples' part (``examples.py``) when the namespace's cards
    have examples and the embedding stage is on; unchanged (no part at all) otherwise."""
    if examples is None or "embedding" not in stages or query_vec is None:
        return scores
    part = np.zeros(scores.cols.size, dtype=np.float32)
    if scores.signal and examples.dim == example_dim(index):
        part = examples_part(examples, index, scores.cols, scores.total(), query_vec, config)
    return dataclasses.replace(scores, examples=part)


def with_memory(
    index: RouterIndex,
    scores: Scores,
    memory: QueryMemory | None,
    query_vec: np.ndarray | None,
    config: RouterConfig,
    own: QueryMemory | None = None,
) -> Scores:
    """``scores`` with query memory's part (``memory.py``) when the namespace has a memory;
    unchanged (no ``memory`` part at all) when it has none. ``own``: the routing key's
    unconfirmed steps at full weight (app/loop/trust.py); a tool's part is the better of
    the two votes, over the same pool."""
    if memory is None:
        return scores
    part = np.zeros(scores.cols.size, dtype=np.float32)
    if query_vec is not None and scores.signal and memory.dim == index.embeddings.shape[1]:
        total = scores.total()
        part = memory_part(memory, index.names, scores.cols, total, query_vec, config)
        if own is not None and own.dim == memory.dim:
            mine = memory_part(own, index.names, scores.cols, total, query_vec, config)
            np.maximum(part, mine, out=part)
    return dataclasses.replace(scores, memory=part)


def query_shares(
    index: RouterIndex, query: QueryRows, config: RouterConfig, stages: frozenset[str]
) -> list[float] | None:
    """The CJK share of each of the query's texts when signals are weighed per pair
    (``language.py``): with the embedding stage on, z-score fusion and an encoder with a
    multilingual part, and CJK in the query or in some card; else ``None``."""
    if index.multilingual is None or config.fusion != "zscore" or "embedding" not in stages:
        return None
    shares = [cjk_share(text) for text in query.texts]
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
    shares = query_shares(index, query, config, stages)
    if shares is None:
        fast = candidate_scores(
            index, query, query_vec, eligible, prior, config, stages, cosines, depth
        )
        if fast is not None:
            return fast
    select: slice | np.ndarray = slice(None) if eligible is None else eligible
    cols = np.arange(len(index)) if eligible is None else eligible
    keyword_hit = bool(query.keyword[0, select].any())
    kw_rows = query.keyword[:, select] if "keyword" in stages else None
    emb_rows, moments, languages = None, None, None
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
            if shares is not None:
                languages = language_view(index, shares, found.unit, select)
    signal = (kw_rows is not None and keyword_hit) or emb_rows is not None
    keyword, embedding, scale = np.zeros(cols.size), np.zeros(cols.size), 1.0
    parts = None
    if signal:
        keyword, embedding, parts = fuse_parts(kw_rows, emb_rows, config, moments, languages)
        scale = best_fused(keyword, embedding)
        keyword, embedding = relative_to_best(keyword, embedding, scale)
    boost = np.zeros(cols.size)
    if "prior" in stages:
        boost = prior_part(index, prior, config)[select]
        if not keyword_hit and index.pinned.size:
            boost = boost + config.pinned_boost * np.isin(cols, index.pinned)
    bm25 = query.keyword[0, select]
    return Scores(cols, keyword, embedding, boost, signal, bm25, emb_rows, scale, parts=parts)


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

    It applies to the common case (``stage_scores`` does not ask when signals are weighed
    per pair, ``language.py``): one query text, z-score fusion with both stages on and
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
    cols = positions if eligible is None else eligible[positions]
    return Scores(
        cols, kw_part, emb_part, boost[positions], True, keyword[positions], raw[None], scale
    )


def fallback_positions(index: RouterIndex, scores: Scores, k: int) -> np.ndarray:
    """Positions of the pinned tools, then of the most used ones, best prior first."""
    pinned = np.isin(scores.cols, index.pinned)
    keep = np.flatnonzero(pinned | (scores.prior > 0))
    order = np.lexsort((keep, -scores.prior[keep], ~pinned[keep]))
    return keep[order][:k]


@dataclass(frozen=True, slots=True)
class Step:
    """What the confidence needs of the step beyond the scores: its analysed rows, how many
    tools it was routed among, the pool its neighbours are read from, the model."""

    rows: QueryRows
    tools: int
    pool: np.ndarray
    model: ConfidenceModel
    calibration: Calibration | None = None  # the namespace's own (adapter.Learned)


def evidence(scores: Scores, step: Step, positions: np.ndarray, pen: np.ndarray) -> list[Evidence]:
    """The :class:`Evidence` of the tools at ``positions``: a few reads of arrays at hand.

    Neighbours (``lead``, ``gap``) are the other tools of the pool (the best ``pool_size``
    before the rule check); with none, a tool of average relevance (fused 0) stands in.
    """

    def fused(at: np.ndarray) -> list[float]:
        values: list[float] = ((scores.keyword[at] + scores.embedding[at]) * scores.scale).tolist()
        return values

    mine, pooled = fused(positions), sorted(fused(step.pool))  # ascending
    pool = set(step.pool.tolist())  # np.isin costs ~15 µs on arrays this small
    in_pool = [p in pool for p in positions.tolist()]
    cols = scores.cols[positions]
    distinct = len(set(step.rows.tokens))
    matched = matched_in(step.rows.touched, cols).tolist() if distinct else [0] * cols.size
    if scores.cosine is not None:
        rows = scores.cosine[:, positions]
        whole, best_ask = rows[0].tolist(), rows.max(axis=0).tolist()
    else:
        whole = best_ask = [0.0] * positions.size
    bm25, part = scores.bm25[positions].tolist(), pen.tolist()
    asks = max(len(step.rows.texts) - 1, 1)
    out = []
    for j, value in enumerate(mine):
        # the pool less this tool (one copy of its value), ascending
        others = pooled
        if in_pool[j]:
            at = bisect.bisect_left(pooled, value)
            others = pooled[:at] + pooled[at + 1 :]
        below = bisect.bisect_right(others, value)
        out.append(
            Evidence(
                cosine=whole[j],
                ask_cosine=best_ask[j],
                bm25=bm25[j],
                coverage=matched[j] / max(distinct, 1),
                fused=value,
                lead=value - (others[-1] if others else 0.0),
                gap=value - (others[below - 1] if below else 0.0),
                tools=step.tools,
                asks=asks,
                penalty=part[j],
            )
        )
    return out


def candidates(
    index: RouterIndex,
    scores: Scores,
    positions: np.ndarray,
    pen: np.ndarray,
    verdicts: Sequence[Verdict],
    step: Step,
    served: Sequence[int] | None = None,
) -> list[Candidate]:
    """One :class:`Candidate` per position, in the given order; ``served``: the part each
    serves (a covering answer), whose evidence its confidence is read from."""
    out = []
    if served is not None:  # a covering answer: each for the part it serves
        seen_all = part_evidence(index, scores, step, positions, pen, served)
    else:
        seen_all = evidence(scores, step, positions, pen)
    for j, (p, seen) in enumerate(zip(positions, seen_all, strict=True)):
        parts = {
            "keyword": float(scores.keyword[p]),
            "embedding": float(scores.embedding[p]),
            "prior": float(scores.prior[p]),
            "penalty": float(pen[j]),
        }
        if scores.memory is not None:
            parts["memory"] = float(scores.memory[p])
        if scores.examples is not None:
            parts["examples"] = float(scores.examples[p])
        if scores.learned is not None:
            parts["learned"] = float(scores.learned[p])
        name = index.names[scores.cols[p]]
        found = verdicts[j]
        confidence = step.model.confidence(seen)
        if step.calibration is not None:
            confidence = step.calibration(confidence)
        out.append(
            Candidate(
                name,
                sum(parts.values()),
                parts,
                found.missing,
                confidence,
                seen,
                found.invalid_context,
                None if served is None else int(served[j]),
            )
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
    min_confidence: float | None = None,
    prior: Mapping[str, float] | None = None,
    config: RouterConfig,
    stages: frozenset[str] = ALL_STAGES,
    cosines: Cosines = gemv_rows,
    texts: Sequence[str] | None = None,
    confidence: ConfidenceModel = CONFIDENCE_MODEL,
    memory: QueryMemory | None = None,
    examples: QueryMemory | None = None,
    split: bool = True,
    own_memory: QueryMemory | None = None,
    learned: Learned | None = None,
) -> list[Candidate]:
    """The top-``k`` tools for ``query``, each with its score explained stage by stage and
    its confidence (``confidence.py``); those below ``min_confidence`` are left out.

    ``cosines`` computes the embedding stage's matrix product; the default is plain numpy,
    a service passes one that shares the product with concurrent routes (app/embedding/cosines.py).
    ``texts``: ``query_texts(query)``, when the caller has segmented the query already.
    ``memory``: the namespace's query memory (``memory.py``), ``None`` when it has none;
    ``examples``: its cards' examples (``examples.py``, ``card_examples``), likewise.
    ``own_memory``: the routing key's own steps that other keys have not confirmed, at full
    weight (app/loop/trust.py; ``memory`` holds them at the weight every key sees).
    ``split``: read the step as its parts (``parts.py``) and cover them; ``False`` reads it
    as one part. ``learned``: the namespace's serving adapter (``adapter.py``), ``None``
    when it has none or learning is off (then the answer is as without learning).
    """
    check_stages(stages)
    eligible = index.eligible(tags)
    if k <= 0 or len(index) == 0 or (eligible is not None and eligible.size == 0):
        return []
    if min_score is not None:  # a score shown as 0.9 (0.89999998 in float32) passes 0.9
        min_score -= 0.5 * 10.0**-SCORE_DECIMALS
    rows = analyse_query(index, query, texts, split)
    depth = max(config.pool_size, k)
    scores = stage_scores(index, rows, query_vec, eligible, prior, config, stages, cosines, depth)
    scores = with_memory(index, scores, memory, query_vec, config, own_memory)
    scores = with_examples(index, scores, examples, query_vec, config, stages)
    scores = with_learned(index, scores, learned, query_vec, stages)
    total = scores.total()
    covering = scores.parts is not None
    if scores.signal:
        pool = top_indices(total, depth)
        if covering:
            pool = with_leaders(pool, scores, total)
    else:  # nothing to go on: the pinned defaults and the most used tools only
        pool = top_indices(total, k)
        pool = pool[total[pool] > 0]
    tools = len(index) if eligible is None else eligible.size
    step = Step(rows, tools, pool, confidence, None if learned is None else learned.calibration)
    diversify = len(rows.texts) > 1 or not config.mmr_multi_ask_only
    lam = config.mmr_lambda if diversify else 1.0
    # Plain top-k (no MMR): the pool, best first, is checked only as far as it can matter.
    until = (k, min_score) if (lam >= 1.0 or k <= 1) and not covering else None
    rules = RuleCheck.of(index, rows, context) if "penalty" in stages else None
    pool, pen, verdicts = rule_check(index, scores, pool, rules, config, stages, until)
    final = total[pool] + pen
    keep = np.flatnonzero(final >= min_score) if min_score is not None else np.arange(pool.size)
    if keep.size == 0:
        pool = fallback_positions(index, scores, k)
        pool, pen, verdicts = rule_check(index, scores, pool, rules, config, stages)
        fallback = candidates(index, scores, pool, pen, verdicts, step)
        fallback = [c for c in fallback if min_score is None or c.score >= min_score]
        return confident(non_increasing(fallback), min_confidence)
    served: list[int] | None = None
    if covering:
        found = covering_answer(index, scores, step, pool[keep], pen[keep], final[keep], k, lam)
        order, served = keep[found.order], found.part.tolist()
    elif lam >= 1.0 or k <= 1:  # plain top k: no vectors to read
        order = keep[top_indices(final[keep], k)]
    else:
        order = keep[mmr_order(final[keep], index.embeddings[scores.cols[pool[keep]]], k, lam)]
    checked = [verdicts[i] for i in order]
    answer = candidates(index, scores, pool[order], pen[order], checked, step, served)
    return confident(non_increasing(answer), min_confidence)


# A covering answer may need a part's best tools beyond the whole step's pool: this many.
PART_LEADERS = 3


def with_leaders(pool: np.ndarray, scores: Scores, total: np.ndarray) -> np.ndarray:
    """The pool and each part's ``PART_LEADERS`` best tools, best ``total`` first."""
    assert scores.parts is not None
    extra = np.setdiff1d(part_leaders(scores.parts, scores.prior, PART_LEADERS), pool)
    if not extra.size:
        return pool
    both = np.concatenate([pool, extra])
    return both[np.argsort(-total[both], kind="stable")]


def covering_answer(
    index: RouterIndex,
    scores: Scores,
    step: Step,
    positions: np.ndarray,
    pen: np.ndarray,
    final: np.ndarray,
    k: int,
    lam: float,
) -> Cover:
    """The covering order of the checked ``positions`` (``cover.py``). A tool's score for a
    part is its relevance to that part (the part's best is 1.0) plus its prior and its
    penalty, as the whole step's; each part's leader is ranked by its confidence as the
    tool for that part (``part_evidence.py``)."""
    assert scores.parts is not None
    part_scores = relative_rows(scores.parts)[:, positions] + scores.prior[positions] + pen
    best = leaders(part_scores)
    seen = part_evidence(index, scores, step, positions[best], pen[best], range(best.size))
    confidence = [step.model.confidence(e) for e in seen]
    if step.calibration is not None:
        confidence = [step.calibration(c) for c in confidence]
    vectors = index.embeddings[scores.cols[positions]] if lam < 1.0 else None
    return cover(part_scores, confidence, final, vectors, k, lam)


def confident(answer: list[Candidate], min_confidence: float | None) -> list[Candidate]:
    """The candidates whose confidence (as shown: rounded) reaches ``min_confidence``."""
    if min_confidence is None:
        return answer
    return [c for c in answer if c.confidence >= min_confidence]


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
    total = scores.total()[positions]
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
