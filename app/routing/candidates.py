"""From checked scores to the answer: each candidate's contributions, confidence and
missing parameters, in the plain top-k order or the covering order of a step's parts.

Each candidate's ``stages`` holds every stage's additive contribution; they sum to its
``score``. Its ``confidence`` is read from the raw evidence (``confidence.py``): the scores
say which tool is best, the confidence whether to trust it.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.routing.bm25 import matched_in
from app.routing.calibration import Calibration
from app.routing.confidence import ConfidenceModel, Evidence
from app.routing.cover import Cover, cover, leaders, part_leaders, relative_rows
from app.routing.index import RouterIndex
from app.routing.part_evidence import part_evidence
from app.routing.penalty import ParameterCheck
from app.routing.scores import Scores
from app.routing.signals import QueryRows
from app.routing.types import Candidate

# A covering answer may need a part's best tools beyond the whole step's pool: this many.
PART_LEADERS = 3


@dataclass(frozen=True, slots=True)
class ConfidenceBasis:
    """What the confidence needs of the step beyond the scores: its analysed rows, how many
    tools it was routed among, the pool its neighbours are read from (positions), the model
    and a calibration of it (None: the model as it is)."""

    rows: QueryRows
    tools: int
    pool: np.ndarray
    model: ConfidenceModel
    calibration: Calibration | None = None

    def confidences(self, evidence: Sequence[Evidence]) -> list[float]:
        found = self.model.confidences(evidence)
        return found if self.calibration is None else [self.calibration(c) for c in found]


def fallback_positions(index: RouterIndex, scores: Scores, k: int) -> np.ndarray:
    """Positions of the first ``k`` pinned tools (the usage prior orders no fallback: it
    moves a route only as a feature of a promoted reranker)."""
    return np.flatnonzero(np.isin(scores.tool_ids, index.pinned))[:k]


def evidence(
    scores: Scores, basis: ConfidenceBasis, positions: np.ndarray, pen: np.ndarray
) -> list[Evidence]:
    """The :class:`Evidence` of the tools at ``positions``: a few reads of arrays at hand.

    Neighbours (``lead``, ``gap``) are the other tools of the pool (the best ``pool_size``
    before the rule check); with none, a tool of average relevance (fused 0) stands in.
    """

    def fused(at: np.ndarray) -> list[float]:
        values: list[float] = ((scores.keyword[at] + scores.embedding[at]) * scores.scale).tolist()
        return values

    mine, pooled = fused(positions), sorted(fused(basis.pool))  # ascending
    pool = set(basis.pool.tolist())  # np.isin's overhead outweighs arrays this small
    in_pool = [p in pool for p in positions.tolist()]
    tool_ids = scores.tool_ids[positions]
    distinct = len(set(basis.rows.tokens))
    matched = matched_in(basis.rows.touched, tool_ids).tolist() if distinct else [0] * tool_ids.size
    if scores.cosine is not None:
        rows = scores.cosine[:, positions]
        whole, best_part = rows[0].tolist(), rows.max(axis=0).tolist()
    else:
        whole = best_part = [0.0] * positions.size
    bm25, pens = scores.bm25[positions].tolist(), pen.tolist()
    part_count = max(len(basis.rows.texts) - 1, 1)
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
                part_cosine=best_part[j],
                bm25=bm25[j],
                coverage=matched[j] / max(distinct, 1),
                fused=value,
                lead=value - (others[-1] if others else 0.0),
                gap=value - (others[below - 1] if below else 0.0),
                tools=basis.tools,
                part_count=part_count,
                penalty=pens[j],
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class Ranked:
    """A cold answer, best first, as the columns its candidates are made of: a serving model
    reads all of them (``reranker.py``) and shows a few, so a :class:`Candidate` is built
    only for those shown (``candidate``)."""

    names: list[str]
    stages: dict[str, list[float]]  # each stage's contribution, in the answers' order
    scores: list[float]  # each candidate's stages summed in that order
    checks: Sequence[ParameterCheck]
    evidence: list[Evidence]
    confidences: list[float]
    served: list[int] | None = None

    def __len__(self) -> int:
        return len(self.names)

    def candidate(self, j: int, lift: float | None = None, confidence: float = 0.0) -> Candidate:
        """The ``j``-th candidate; with ``lift``, raised by it (a stage of its own,
        ``learned``) and shown with ``confidence`` instead of its own."""
        stages = {name: values[j] for name, values in self.stages.items()}
        score = self.scores[j]
        if lift is not None:
            stages["learned"] = lift
            score += lift
        else:
            confidence = self.confidences[j]
        found = self.checks[j]
        part = None if self.served is None else self.served[j]
        return Candidate(
            self.names[j],
            score,
            stages,
            found.missing,
            confidence,
            self.evidence[j],
            found.invalid_context,
            part,
        )

    def candidates(self) -> list[Candidate]:
        return [self.candidate(j) for j in range(len(self.names))]

    def only(self, keep: Sequence[int]) -> Ranked:
        """The candidates at ``keep``, in that order."""
        return Ranked(
            [self.names[j] for j in keep],
            {name: [values[j] for j in keep] for name, values in self.stages.items()},
            [self.scores[j] for j in keep],
            [self.checks[j] for j in keep],
            [self.evidence[j] for j in keep],
            [self.confidences[j] for j in keep],
            None if self.served is None else [self.served[j] for j in keep],
        )


def ranked(
    index: RouterIndex,
    scores: Scores,
    positions: np.ndarray,
    pen: np.ndarray,
    checks: Sequence[ParameterCheck],
    basis: ConfidenceBasis,
    served: Sequence[int] | None = None,
) -> Ranked:
    """The candidates at ``positions``, in the given order; ``served``: the part each
    serves (a covering answer), whose evidence its confidence is read from."""
    if served is not None:  # a covering answer: each for the part it serves
        seen = part_evidence(index, scores, basis, positions, pen, served)
    else:
        seen = evidence(scores, basis, positions, pen)
    # each array's values at the positions as Python floats at once (not one read each)
    stages = {
        "keyword": scores.keyword[positions].tolist(),
        "embedding": scores.embedding[positions].tolist(),
        "prior": scores.pinned[positions].tolist(),  # the stage's name in answers: the pin
        "penalty": np.asarray(pen, dtype=np.float64).tolist(),
    } | {name: vote[positions].tolist() for name, vote in scores.votes}
    total = [sum(values) for values in zip(*stages.values(), strict=True)]
    names = [index.names[t] for t in scores.tool_ids[positions].tolist()]
    part = None if served is None else [int(s) for s in served]
    return Ranked(names, stages, total, checks, seen, basis.confidences(seen), part)


def with_leaders(pool: np.ndarray, scores: Scores, total: np.ndarray) -> np.ndarray:
    """The pool and each part's ``PART_LEADERS`` best tools, best ``total`` first."""
    assert scores.parts is not None
    extra = np.setdiff1d(part_leaders(scores.parts, scores.pinned, PART_LEADERS), pool)
    if not extra.size:
        return pool
    both = np.concatenate([pool, extra])
    return both[np.argsort(-total[both], kind="stable")]


def covering_answer(
    index: RouterIndex,
    scores: Scores,
    basis: ConfidenceBasis,
    positions: np.ndarray,
    pen: np.ndarray,
    final: np.ndarray,
    k: int,
    lam: float,
) -> Cover:
    """The covering order of the checked ``positions`` (``cover.py``). A tool's score for a
    part is its relevance to that part (the part's best is 1.0) plus its pin and its
    penalty, as the whole step's; each part's leader is ranked by its confidence as the
    tool for that part (``part_evidence.py``)."""
    assert scores.parts is not None
    part_scores = relative_rows(scores.parts)[:, positions] + scores.pinned[positions] + pen
    best = leaders(part_scores)
    seen = part_evidence(index, scores, basis, positions[best], pen[best], range(best.size))
    confidence = basis.confidences(seen)
    vectors = index.embeddings[scores.tool_ids[positions]] if lam < 1.0 else None
    return cover(part_scores, confidence, final, vectors, k, lam)


def confident(answer: list[Candidate], min_confidence: float | None) -> list[Candidate]:
    """The candidates whose confidence (as shown: rounded) reaches ``min_confidence``."""
    if min_confidence is None:
        return answer
    return [c for c in answer if c.confidence >= min_confidence]
