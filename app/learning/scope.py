"""Whose routes a learned model may move: bounded influence (app/loop/trust.py) for a model.

A weight bounds what one key's reports add to the prior or to memory; it cannot bound a
model, which one reranker serves every key of the namespace with: a few reports of one key,
at any weight, can teach it a whole kind of step. So a model moves a tool

* in **every** key's routes only if the tool is *confirmed*: reported (in the steps it was
  trained on) by at least ``trust_keys`` distinct keys, ``agreement`` 1 — and only if the
  guard found that other keys agree with what it learned (``shared``, app/learning/guard.py:
  the exam counts each key at most as often as the ``trust_keys``-th busiest one);
* in **one** key's routes if that key alone reported the tool (``own``);
* in nobody's otherwise (a tool some keys, but too few, reported).

A tool nobody reported is never moved, as before. ``trust_keys`` 1: every reported tool is
confirmed. A service without keys is one key (``ANONYMOUS``), whose routes see its own
tools: it learns as before.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from app.loop.memory import RememberedStep
from app.loop.trust import agreement


@dataclass(frozen=True, slots=True)
class Scope:
    """The tools a model trained on some steps may move for every key, and for each key."""

    confirmed: frozenset[str]
    own: Mapping[str, frozenset[str]]  # key → the tools it alone reported


def reporters(steps: Iterable[RememberedStep]) -> dict[str, frozenset[str]]:
    """Tool → the distinct keys whose reports of it are among ``steps``."""
    keys: dict[str, set[str]] = defaultdict(set)
    for step in steps:
        keys[step.tool].update(step.keys)
    return {tool: frozenset(who) for tool, who in keys.items()}


def scope_of(steps: Iterable[RememberedStep], needed: int) -> Scope:
    """The scope of a model trained on ``steps`` (``needed``: ``trust_keys``)."""
    keys = reporters(steps)
    confirmed = frozenset(t for t, who in keys.items() if who and agreement(len(who), needed) >= 1)
    own: dict[str, set[str]] = defaultdict(set)
    for tool, who in keys.items():
        if tool not in confirmed and len(who) == 1:
            own[next(iter(who))].add(tool)
    return Scope(confirmed, {key: frozenset(tools) for key, tools in sorted(own.items())})
