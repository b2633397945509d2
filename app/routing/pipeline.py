"""``Router.route``: the three stages end to end, for one step against one namespace.

1. keyword — BM25 of the whole step and of each of its parts (``parts.py``) over all tools;
2. embedding — cosine of the step (and part) vectors with every tool's vector; both fused and
   rescaled so the best tool's fused score is 1.0 (``scores.py``), then the cold evidence as
   votes (``votes.py``: the step's values, action and resource, the cards' examples); the top
   ``pool_size`` tools go on;
3. penalty — ``-missing_param_penalty`` per required parameter that neither the step nor the
   context can supply (``rule_check.py``); then the top ``k`` (optionally MMR-diversified). A
   step read as several parts gets a covering answer (``cover.py``): each part's best tool
   first, then the rest.

That is the cold ranking. A namespace whose guard promoted a model (``NamespaceView.learned``)
has its cold top ``depth`` reordered by it (``reranker.py``); the usage prior and query memory
reach a route only as that model's features.

When the step matches no keyword, pinned default tools get ``pinned_boost``; when neither
keywords nor an embedding give any signal, the answer is the pinned default tools. No
candidate ever scores below ``min_score``: when nothing reaches it, the answer is empty
(fewer than k, as asked). Candidates below ``min_confidence`` are left out, so "nothing here
fits" is an empty answer.

What lives how long: a :class:`Router` holds the service's fixed parts (config, enabled
stages, the cosine product, the confidence model); a ``NamespaceView`` (``view.py``) what
one namespace has, built once per change; ``RouteOptions`` (``types.py``) what one request
asks.

Names of arrays in ``route``: ``pool`` holds positions into the scored arrays
(``Scores.tool_ids``), best first; ``passing`` and ``chosen`` hold indices into ``pool``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.routing.actions import step_action
from app.routing.candidates import (
    ConfidenceBasis,
    Ranked,
    confident,
    covering_answer,
    fallback_positions,
    ranked,
    with_leaders,
)
from app.routing.confidence import ConfidenceModel, non_increasing
from app.routing.confidence_fit import CONFIDENCE_MODEL
from app.routing.diversity import mmr_order, top_indices
from app.routing.reading import read_step
from app.routing.reranker import Learned
from app.routing.rule_check import RuleCheck, rule_check
from app.routing.scores import Scoring, stage_scores
from app.routing.signals import Cosines, analyse_query, gemv_rows
from app.routing.types import ALL_STAGES, Candidate, RouteOptions, RouterConfig
from app.routing.view import NamespaceView
from app.routing.votes import Ballot, with_votes

# Scores are shown rounded to this many decimals (app/route/answer.py); min_score is
# compared with what the caller was shown, not with the float32 underneath.
SCORE_DECIMALS = 6
DEFAULT_OPTIONS = RouteOptions()


def check_stages(stages: frozenset[str]) -> None:
    """Unknown stage names → ValueError."""
    unknown = set(stages) - ALL_STAGES
    if unknown:
        raise ValueError(f"unknown stages {sorted(unknown)}; choose from {sorted(ALL_STAGES)}")


@dataclass(frozen=True, slots=True)
class Router:
    """The ranking core with the service's fixed parts: the weights (``config``), the stages
    it runs (``enabled``: all of them but in ablations), the cosine product (plain numpy by
    default; a service passes one that shares the product with concurrent routes,
    app/embedding/cosines.py) and the confidence model."""

    config: RouterConfig
    enabled: frozenset[str] = ALL_STAGES
    cosines: Cosines = gemv_rows
    confidence: ConfidenceModel = CONFIDENCE_MODEL

    def __post_init__(self) -> None:
        check_stages(self.enabled)

    def route(
        self,
        view: NamespaceView,
        query: str,
        vectors: np.ndarray | None,
        options: RouteOptions = DEFAULT_OPTIONS,
        *,
        texts: Sequence[str] | None = None,
        cosines: Cosines | None = None,
    ) -> list[Candidate]:
        """The top-``options.k`` tools of ``view`` for ``query``, each with its score
        explained stage by stage and its confidence (``confidence.py``).

        ``vectors``: the step's embedding, one row per text of ``query_texts(query)`` (or
        just the whole step's); ``None`` without one. ``texts``: ``query_texts(query)``
        when the caller has read the step's parts already. ``cosines``: a product shared
        with other steps of a batch, instead of the router's.

        With no serving model the answer is the cold ranking; with one, the cold top
        ``depth`` reordered by it (``reranker.py``).
        """
        learned = view.learned
        if learned is None or options.k <= 0:
            return self.cold(view, query, vectors, options, texts=texts, cosines=cosines)
        learned = learned.for_key(options.key)
        cold = self.ranked(
            view, query, vectors, wide(options, learned), texts=texts, cosines=cosines
        )
        return reranked(learned, cold, vectors, query, options)

    def cold(
        self,
        view: NamespaceView,
        query: str,
        vectors: np.ndarray | None,
        options: RouteOptions = DEFAULT_OPTIONS,
        *,
        texts: Sequence[str] | None = None,
        cosines: Cosines | None = None,
    ) -> list[Candidate]:
        """The cold ranking: what ``route`` answers with no model serving. The usage prior
        and query memory never enter it: they are features of a model the guard promoted."""
        answer = self.ranked(view, query, vectors, options, texts=texts, cosines=cosines)
        return confident(non_increasing(answer.candidates()), options.min_confidence)

    def ranked(
        self,
        view: NamespaceView,
        query: str,
        vectors: np.ndarray | None,
        options: RouteOptions = DEFAULT_OPTIONS,
        *,
        texts: Sequence[str] | None = None,
        cosines: Cosines | None = None,
    ) -> Ranked:
        """``cold`` as columns, before its confidences are made non-increasing and
        ``min_confidence`` is applied: what a serving model reorders."""
        index = view.index
        eligible = index.eligible(options.tags)
        k = options.k
        if k <= 0 or len(index) == 0 or (eligible is not None and eligible.size == 0):
            return Ranked([], {}, [], [], [], [])
        min_score = options.min_score
        if min_score is not None:  # a score shown as 0.9 (0.89999998 in float32) passes 0.9
            min_score -= 0.5 * 10.0**-SCORE_DECIMALS
        rows = analyse_query(index, query, texts, options.split)
        depth = max(self.config.pool_size, k)
        scoring = Scoring(
            index,
            rows,
            vectors,
            eligible,
            self.config,
            self.enabled,
            self.cosines if cosines is None else cosines,
            depth,
        )
        reading = read_step(rows.text)
        asks = step_action(reading.model_text, index.speller.fix)
        ballot = Ballot(
            view, vectors, self.config, self.enabled, reading, asks,
            tuple(rows.texts[1:]), rows.text,
        )  # fmt: skip
        scores = with_votes(ballot, stage_scores(scoring))
        total = scores.total()
        covering = scores.parts is not None
        if scores.signal:
            pool = top_indices(total, depth)
            if covering:
                pool = with_leaders(pool, scores, total)
        else:  # nothing to go on: the pinned defaults only
            pool = top_indices(total, k)
            pool = pool[total[pool] > 0]
        tools = len(index) if eligible is None else eligible.size
        basis = ConfidenceBasis(rows, tools, pool, self.confidence)
        diversify = len(rows.texts) > 1 or not self.config.mmr_multi_part_only
        lam = self.config.mmr_lambda if diversify else 1.0
        # Plain top-k (no MMR): the pool, best first, is checked only as far as it can matter.
        until = (k, min_score) if (lam >= 1.0 or k <= 1) and not covering else None
        rules = RuleCheck.of(rows, options.context) if "penalty" in self.enabled else None
        pool, pen, checks = rule_check(index, scores, pool, rules, self.config, until)
        final = total[pool] + pen
        passing = np.arange(pool.size)
        if min_score is not None:
            passing = np.flatnonzero(final >= min_score)
        if passing.size == 0:
            pool = fallback_positions(index, scores, k)
            pool, pen, checks = rule_check(index, scores, pool, rules, self.config)
            fallback = ranked(index, scores, pool, pen, checks, basis)
            if min_score is None:
                return fallback
            return fallback.only([j for j, s in enumerate(fallback.scores) if s >= min_score])
        served: list[int] | None = None
        if covering:
            found = covering_answer(
                index, scores, basis, pool[passing], pen[passing], final[passing], k, lam
            )
            chosen, served = passing[found.order], found.part.tolist()
        elif lam >= 1.0 or k <= 1:  # plain top k: no vectors to read
            chosen = passing[top_indices(final[passing], k)]
        else:
            vectors_of = index.embeddings[scores.tool_ids[pool[passing]]]
            chosen = passing[mmr_order(final[passing], vectors_of, k, lam)]
        picked = [checks[i] for i in chosen]
        return ranked(index, scores, pool[chosen], pen[chosen], picked, basis, served)


def wide(options: RouteOptions, learned: Learned) -> RouteOptions:
    """The cold route ``learned`` reorders: its top ``depth`` (at least ``k``), every
    candidate whatever its confidence."""
    return dataclasses.replace(options, k=max(options.k, learned.ranker.depth), min_confidence=None)


def reranked(
    learned: Learned,
    cold: Ranked | Sequence[Candidate],
    vectors: np.ndarray | None,
    query: str,
    options: RouteOptions,
) -> list[Candidate]:
    """What ``route`` answers with ``learned`` serving, as ``options.key`` reads it, from the
    cold answer at ``wide(options, learned)``. The cold ranking reads neither the model nor
    the key (``Ballot``), so one cold answer serves every model and key: the guard's exam
    reads each held-out step's once for all its views (app/learning/exam.py)."""
    answer = learned.rerank(cold, vectors, query, options.k)
    return confident(non_increasing(answer), options.min_confidence)
