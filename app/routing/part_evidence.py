"""The evidence of a candidate as the tool for the part of the step it serves.

In a covering answer (``cover.py``) each candidate serves one part of the step. Its
confidence is then read from that part's evidence, as if the part were the whole step: the
part's own cosine, BM25 and term coverage, its fused score among the pool's for that part,
and its lead and gap over the pool's other tools for that part. A part's best tool is that
part's leader, as the best tool of a one-part step is the step's.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from app.routing.bm25 import bm25_row, matched_in
from app.routing.confidence import Evidence

if TYPE_CHECKING:
    from app.routing.candidates import ConfidenceBasis
    from app.routing.index import RouterIndex
    from app.routing.scores import Scores


def _neighbours(pooled: list[float], value: float, in_pool: bool) -> tuple[float, float]:
    """``lead`` and ``gap`` of ``value`` among ``pooled`` (ascending), less one copy of it
    when it is one of them; a missing neighbour is a tool of average relevance (0)."""
    others = pooled
    if in_pool:
        at = bisect.bisect_left(pooled, value)
        others = pooled[:at] + pooled[at + 1 :]
    below = bisect.bisect_right(others, value)
    lead = value - (others[-1] if others else 0.0)
    gap = value - (others[below - 1] if below else 0.0)
    return lead, gap


def part_evidence(
    index: RouterIndex,
    scores: Scores,
    basis: ConfidenceBasis,
    positions: np.ndarray,
    pen: np.ndarray,
    served: Sequence[int],
) -> list[Evidence]:
    """The :class:`Evidence` of the tools at ``positions``, each for its ``served`` part."""
    assert scores.parts is not None
    rows = basis.rows
    pool = set(basis.pool.tolist())
    pooled = {s: sorted(scores.parts[s, basis.pool].tolist()) for s in set(served)}
    reads = {s: _part_terms(index, rows.part_tokens[s]) for s in set(served)}
    cosine = scores.cosine
    out = []
    for j, (p, s) in enumerate(zip(positions.tolist(), served, strict=True)):
        value = float(scores.parts[s, p])
        lead, gap = _neighbours(pooled[s], value, p in pool)
        tool = int(scores.tool_ids[p])
        touched, distinct = reads[s]
        matched = int(matched_in(touched, np.array([tool]))[0]) if distinct else 0
        seen = 0.0
        if cosine is not None:
            seen = float(cosine[1 + s, p] if cosine.shape[0] > 1 + s else cosine[0, p])
        out.append(
            Evidence(
                cosine=seen,
                part_cosine=seen,
                bm25=float(rows.keyword[1 + s, tool]),
                coverage=matched / max(distinct, 1),
                fused=value,
                lead=lead,
                gap=gap,
                tools=basis.tools,
                part_count=1,
                penalty=float(pen[j]),
            )
        )
    return out


def _part_terms(index: RouterIndex, tokens: Sequence[str]) -> tuple[np.ndarray, int]:
    """The tools a part's terms touch (``bm25_row``) and its number of distinct terms."""
    return bm25_row(index.keyword, tokens)[1], len(set(tokens))
