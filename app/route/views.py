"""Each namespace's ``NamespaceView`` (app/routing/view.py), built once per change.

A route reads a namespace's snapshot and the evidence its caches gathered: the usage prior
(app/loop/prior.py), query memory (app/loop/memory.py), the cards' examples
(app/tools/examples.py) and the serving learned model (app/learning/service.py). Each cache
swaps what it holds whole when it refreshes, so a view is still current while every one of
those objects is the one it was built from; ``get`` checks that by identity and builds a new
view only when one of them changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.learning.service import LearningCache
from app.loop.memory import MemoryCache
from app.loop.prior import PriorCache
from app.routing import NamespaceView
from app.tools.examples import ExampleCache
from app.tools.live_index import IndexManager, Snapshot


@dataclass(frozen=True, slots=True)
class Current:
    """A namespace's snapshot (what the answer shows of its cards) and its view."""

    snapshot: Snapshot
    view: NamespaceView


class NamespaceViews:
    """The current view of each namespace, from the live index and the evidence caches."""

    def __init__(
        self,
        index: IndexManager,
        prior: PriorCache,
        memory: MemoryCache,
        examples: ExampleCache,
        learning: LearningCache,
    ) -> None:
        self._index = index
        self._prior = prior
        self._memory = memory
        self._examples = examples
        self._learning = learning
        self._views: dict[str, tuple[tuple[object, ...], Current]] = {}

    def get(self, namespace: str) -> Current | None:
        """The namespace's view; ``None`` while it holds no tool."""
        snapshot = self._index.get(namespace)
        if snapshot is None or not len(snapshot.cards):
            self._views.pop(namespace, None)
            return None
        remembered = self._memory.held(namespace)
        sources = (
            snapshot,
            self._prior.get(namespace),
            self._prior.own_priors(namespace),
            remembered,
            self._examples.get(namespace),
            self._learning.get(namespace),
        )
        cached = self._views.get(namespace)
        if cached is not None and all(a is b for a, b in zip(cached[0], sources, strict=True)):
            return cached[1]
        current = Current(
            snapshot,
            NamespaceView(
                snapshot.index,
                prior=self._prior.get(namespace),
                memory=None if remembered is None else remembered.memory,
                examples=self._examples.get(namespace),
                learned=self._learning.get(namespace),
                own_priors=self._prior.own_priors(namespace),
                own_memories={} if remembered is None else remembered.own,
            ),
        )
        self._views[namespace] = (sources, current)  # one assignment: readers see old or new
        return current
