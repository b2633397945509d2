"""Each namespace's ``NamespaceView`` (app/routing/view.py), built once per change.

A route reads a namespace's snapshot and the evidence its caches gathered: the cards'
examples (app/tools/examples.py) and the serving learned model (app/learning/service.py),
whose features read the namespace's reports (the usage prior and query memory reach a route
only through it). Each cache
swaps what it holds whole when it refreshes, so a view is still current while every one of
those objects is the one it was built from; ``get`` checks that by identity and builds a new
view only when one of them changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.learning.service import LearningCache
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
        examples: ExampleCache,
        learning: LearningCache,
    ) -> None:
        self._index = index
        self._examples = examples
        self._learning = learning
        self._views: dict[str, tuple[tuple[object, ...], Current]] = {}

    def get(self, namespace: str) -> Current | None:
        """The namespace's view; ``None`` while it holds no tool."""
        snapshot = self._index.get(namespace)
        if snapshot is None or not len(snapshot.cards):
            self._views.pop(namespace, None)
            return None
        sources = (
            snapshot,
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
                examples=self._examples.get(namespace),
                learned=self._learning.get(namespace),
            ),
        )
        self._views[namespace] = (sources, current)  # one assignment: readers see old or new
        return current
