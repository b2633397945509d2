"""``NamespaceView``: what a route reads of one namespace, in one immutable value.

A route ranks one namespace's tools (its ``RouterIndex``) with the evidence the namespace has
gathered: its cards' examples and its serving learned model. The service builds a view when
one of these changes (a new snapshot, new examples, a new model: app/route/views.py), never
per route; the ranking core (``pipeline.Router``) reads it and keeps nothing.

A namespace's reports (the usage prior, query memory) reach its routes only through
``learned``, the reranker the guard promoted, whose features read the reported steps
(``reranker.py``; issue 41); with none, a route is the cold ranking.

A new kind of evidence is one more field here and one more vote (``votes.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.routing.index import RouterIndex
from app.routing.memory import QueryMemory
from app.routing.reranker import Learned


@dataclass(frozen=True, slots=True)
class NamespaceView:
    """One namespace's tools and evidence, as every route of it reads them."""

    index: RouterIndex
    examples: QueryMemory | None = None  # the cards' example requests
    learned: Learned | None = None  # the serving learned model (None: none, or off)
