"""Stage 3 of a route: a penalty for each required parameter nothing can supply.

The step is analysed once (``RuleCheck.of``); each tool's required parameters are checked
against it only as far as the answer needs (``rule_check`` with ``until``): a penalty only
lowers a score, so once no later tool of the pool can reach the top ``k``, the rest are
left unchecked. ``penalty.py`` holds the rules themselves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.routing.bm25 import matched_in
from app.routing.index import RouterIndex
from app.routing.penalty import (
    NOTHING_MISSING,
    ParameterCheck,
    StepOffer,
    check_parameters,
    penalty,
    step_offer,
)
from app.routing.reading import Value, read_step
from app.routing.scores import Scores
from app.routing.signals import QueryRows
from app.routing.slots import pattern_checker, unsupplied_ids
from app.routing.types import RouterConfig


@dataclass(frozen=True, slots=True)
class RuleCheck:
    """Stage 3 for one query, analysed once: what it offers, each tool's matched terms, and
    its typed values (``reading.py``)."""

    offer: StepOffer
    touched: np.ndarray  # the tools the query's terms touch, once per term (bm25_row)
    distinct: int  # distinct query terms
    values: tuple[Value, ...] = ()
    context: frozenset[str] = frozenset()  # the context's keys

    @classmethod
    def of(cls, query: QueryRows, context: Mapping[str, Any] | None) -> RuleCheck:
        offer = step_offer(query.text, query.tokens, context)
        keys = frozenset((context or {}).keys())
        values = read_step(query.text).values
        return cls(offer, query.touched, len(set(query.tokens)), values, keys)

    def _checked(self, index: RouterIndex, tool: int, found: ParameterCheck) -> ParameterCheck:
        """``found`` with the required ids no step id fits (``slots.unsupplied_ids``) missing."""
        rules = index.rules[tool]
        supplied = [
            r.name for r in rules if r.name not in found.missing and r.name not in self.context
        ]
        if not supplied or not index.ids:
            return found
        matches = pattern_checker(index.value_check)
        extra = unsupplied_ids(index.profiles[tool], index.ids, self.values, matches, supplied)
        if not extra:
            return found
        missing = tuple(r.name for r in rules if r.name in extra or r.name in found.missing)
        return dataclasses.replace(found, missing=missing)

    def penalties(
        self, index: RouterIndex, tool_ids: np.ndarray, config: RouterConfig
    ) -> tuple[np.ndarray, list[ParameterCheck]]:
        """The penalty and the parameter check of each tool in ``tool_ids``."""
        found = []
        for tool in tool_ids.tolist():
            # A query word the card does not explain supplies a plain string parameter: the
            # terms the card matches are counted only when that can change the answer.
            def unexplained(tool: int = tool) -> bool:
                return bool(matched_in(self.touched, np.array([tool]))[0] < self.distinct)

            rules = index.rules[tool]
            checked = check_parameters(rules, self.offer, index.value_check, unexplained)
            found.append(self._checked(index, tool, checked))
        contributions = [
            penalty(
                c.missing,
                config.missing_param_penalty,
                config.max_penalised_params,
                c.mentioned,
                config.mention_softening,
            )
            for c in found
        ]
        return np.asarray(contributions, dtype=np.float64), found


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
    until: tuple[int, float | None] | None = None,
) -> tuple[np.ndarray, np.ndarray, list[ParameterCheck]]:
    """The positions checked, their penalties and parameter checks (zeros and nothing
    missing when the stage is off: ``rules`` is ``None``).

    With ``until = (k, min_score)`` and ``positions`` best first (by score before the rule
    check), they are checked a few at a time until no later one can reach the top ``k``
    (``settled``); the rest are left out. The top ``k`` is the same as checking them all.
    """
    if rules is None or positions.size == 0:
        return positions, np.zeros(positions.size), [NOTHING_MISSING for _ in positions]
    if until is None:
        pen, every = rules.penalties(index, scores.tool_ids[positions], config)
        return positions, pen, every
    k, min_score = until
    total = scores.total()[positions]
    chunks: list[np.ndarray] = []
    checks: list[ParameterCheck] = []
    done = 0
    while done < positions.size:
        chunk = positions[done : done + k + 2]
        pen, found = rules.penalties(index, scores.tool_ids[chunk], config)
        chunks.append(pen)
        checks.extend(found)
        done += chunk.size
        pen = np.concatenate(chunks)
        if done < positions.size and settled(total[:done] + pen, total[done], k, min_score):
            break
    return positions[:done], np.concatenate(chunks), checks
