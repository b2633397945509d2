"""Bounded influence: how far one key's reports may steer other keys' routes.

A report is evidence of one key: the key that sent it, or, for a report that carries none
(the gateway's call, a validated call), the key that asked for the route (``evidence_key``).
Requests without any key share one (``ANONYMOUS``): a service without keys is one key, and
routes exactly as before. Evidence is weighed for the key that routes:

* its own evidence at full weight;
* another key's at ``agreement(keys, needed) = min(1, keys / needed)`` of its weight, where
  ``keys`` counts the distinct keys whose evidence agrees — the same tool for the same step
  (query memory), the same tool (the usage prior) — and ``needed`` is the setting
  ``trust_keys``; evidence that ``needed`` keys agree on is *confirmed*, full weight for all;
* the same key, step and tool count once, however often reported (``distinct_uses``): a
  flood of identical reports is one report.

So a key alone moves any other key's memory part of a tool by at most
``memory_weight / needed``, and counts ``1 / needed`` of one use per distinct step in another
key's prior. The pure functions here are what the caches (``memory.py``, ``prior.py``) and
the learned reranker's trainer weigh reports with: ``shared_weights`` gives a (tool, step)
pair's sample weight for a model every key is routed with. docs/ROUTING.md, "Bounded
influence", measures it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

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


@dataclass(frozen=True, slots=True)
class Use:
    """One use for the usage prior: a tool, its outcome, the step, whose evidence, when."""

    namespace: str
    tool: str
    outcome: str
    step: str
    key: str
    at: datetime


def distinct_uses(uses: Iterable[Use]) -> list[Use]:
    """One use per (namespace, tool, outcome, step, key): the newest (a flood is one)."""
    newest: dict[tuple[str, str, str, str, str], Use] = {}
    for use in uses:
        at = (use.namespace, use.tool, use.outcome, use.step, use.key)
        if at not in newest or use.at > newest[at].at:
            newest[at] = use
    return list(newest.values())


def tool_keys(uses: Iterable[Use]) -> dict[tuple[str, str], frozenset[str]]:
    """(namespace, tool) → the distinct keys whose uses name it (any outcome: agreeing that
    it is the tool to call, whatever came of the call)."""
    keys: dict[tuple[str, str], set[str]] = defaultdict(set)
    for use in uses:
        keys[(use.namespace, use.tool)].add(use.key)
    return {at: frozenset(who) for at, who in keys.items()}


def use_weights(
    uses: Sequence[Use],
    keys: Mapping[tuple[str, str], frozenset[str]],
    needed: int,
    viewer: str | None = None,
) -> list[float]:
    """Each use's weight in the prior of ``viewer``'s routes (None: a key that made none of
    them): 1 for the viewer's own, ``agreement`` of the tool's keys (``tool_keys``) for
    the others'."""
    return [
        1.0
        if use.key == viewer
        else agreement(len(keys.get((use.namespace, use.tool), ())), needed)
        for use in uses
    ]


def unconfirmed(
    keys: Mapping[tuple[str, str], frozenset[str]], needed: int
) -> dict[str, set[tuple[str, str]]]:
    """Key → the (namespace, tool)s it used that fewer than ``needed`` keys confirm: where
    its own routes see a prior of their own."""
    out: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for at, who in keys.items():
        if agreement(len(who), needed) < 1.0:
            for key in who:
                out[key].add(at)
    return dict(out)


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
