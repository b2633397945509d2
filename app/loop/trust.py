"""Bounded influence: how far one key's reports may steer other keys' routes.

A report is evidence of one key: the key that sent it, or, for a report that carries none
(the gateway's call, a validated call), the key that asked for the route (``evidence_key``).
Requests without any key share one (``ANONYMOUS``): a service without keys is one key, and
routes exactly as before. Evidence is weighed for the key that routes:

* its own evidence at full weight;
* another key's at ``agreement(keys, needed) = min(1, keys / needed)`` of its weight, where
  ``keys`` counts the distinct keys whose evidence agrees (the same tool for the same step)
  and ``needed`` is the setting ``trust_keys``; evidence that ``needed`` keys agree on is
  *confirmed*, full weight for all;
* the same key, step and tool count once, however often reported: a flood of identical
  reports is one report.

So one key's reports weigh ``1 / needed`` of theirs in what another key's routes may learn
from them. The pure functions here are what query memory (``memory.py``) and the learned
reranker's trainer and guard weigh reports with: ``shared_weights`` gives a (tool, step)
pair's sample weight for a model every key is routed with. docs/ROUTING.md, "Bounded
influence", measures it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

ANONYMOUS = ""  # the key of requests made without one
NOBODY = "\x00nobody"  # a key that reported nothing: no request carries it (NUL is refused)


def evidence_key(report_key: str | None, route_key: str | None) -> str:
    """Whose evidence a report is: its own key's, else the route's, else ``ANONYMOUS``."""
    return report_key or route_key or ANONYMOUS


def agreement(keys: int, needed: int) -> float:
    """The share of its weight evidence backed by ``keys`` distinct keys has for a key not
    among them: ``min(1, keys / needed)`` (``needed`` ≤ 1: every report is trusted)."""
    if needed <= 1:
        return 1.0
    return min(1.0, keys / needed)


@dataclass(frozen=True, slots=True)
class Report:
    """One report as the trust rule reads it: the tool, the step (its normalised text, or
    the route's id when the text is not known) and whose evidence it is."""

    tool: str
    step: str
    key: str


def shared_weights(reports: Iterable[Report], needed: int) -> dict[tuple[str, str], float]:
    """(tool, step) → the weight a model serving every key may give that pair: the agreement
    of the distinct keys that reported it (a flood counts once). The trainer's sample
    weights (times its own decay)."""
    keys: dict[tuple[str, str], set[str]] = defaultdict(set)
    for report in reports:
        keys[(report.tool, report.step)].add(report.key)
    return {pair: agreement(len(who), needed) for pair, who in keys.items()}


Votes = Mapping[str, tuple[float, float]]  # key → (wins, losses) on the steps it reported


def key_capped(votes: Votes, needed: int) -> tuple[float, float]:
    """(wins, losses) of an exam over several keys' steps, each key's counted at most as
    often as the ``needed``-th busiest key's (by steps decided): fewer than ``needed`` keys
    can pass nothing, and one key's volume counts no more than another's. ``needed`` ≤ 1:
    the plain sums."""
    if needed <= 1:
        return sum(w for w, _ in votes.values()), sum(lost for _, lost in votes.values())
    decided = sorted((w + lost for w, lost in votes.values()), reverse=True)
    cap = decided[needed - 1] if len(decided) >= needed else 0.0
    wins = losses = 0.0
    for w, lost in votes.values():
        scale = min(1.0, cap / (w + lost)) if w + lost > 0 else 0.0
        wins, losses = wins + w * scale, losses + lost * scale
    return wins, losses


def normalise_text(text: str) -> str:
    """What makes two step texts the same one: case and spacing do not count."""
    return " ".join(text.lower().split())
