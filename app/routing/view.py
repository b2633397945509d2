"""``NamespaceView``: what a route reads of one namespace, in one immutable value.

A route ranks one namespace's tools (its ``RouterIndex``) with the evidence the namespace has
gathered: the usage prior, the steps remembered for its tools (query memory), its cards'
examples and its serving learned model. The service builds a view when one of these
changes (a new snapshot, a refreshed prior or memory, a new model: app/route/views.py),
never per route; the ranking core (``pipeline.Router``) reads it and keeps nothing.

Bounded influence (app/loop/trust.py) makes two of these depend on who routes: a key whose
own reports other keys have not confirmed sees them at full weight in its own routes. The
view holds those per key (``own_priors``, ``own_memories``); ``prior_of`` and ``memory_of``
pick a key's.

Since issue 41 no route reads ``prior``, ``memory``, ``own_priors`` or ``own_memories``:
a namespace's reports reach its routes only through ``learned``, the reranker the guard
promoted, whose features read the same reported steps (``reranker.py``).

A new kind of evidence is one more field here and one more vote (``votes.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from app.routing.index import RouterIndex
from app.routing.memory import QueryMemory
from app.routing.reranker import Learned

Prior = Mapping[str, float]


def _nothing() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class NamespaceView:
    """One namespace's tools and evidence, as every route of it reads them."""

    index: RouterIndex
    prior: Prior | None = None  # tool → usage prior, as every key sees it
    memory: QueryMemory | None = None  # remembered steps, as every key sees them
    examples: QueryMemory | None = None  # the cards' example requests
    learned: Learned | None = None  # the serving learned model (None: none, or off)
    own_priors: Mapping[str, Prior] = field(default_factory=_nothing)  # key → its own prior
    own_memories: Mapping[str, QueryMemory] = field(default_factory=_nothing)  # key → steps

    def prior_of(self, key: str) -> Prior | None:
        """The prior of ``key``'s routes: its own where it has one, else the shared one."""
        own = self.own_priors.get(key)
        return self.prior if own is None else own

    def memory_of(self, key: str) -> QueryMemory | None:
        """``key``'s unconfirmed remembered steps at full weight (None: it has none)."""
        return self.own_memories.get(key)
