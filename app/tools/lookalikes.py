"""Look-alike tools: pairs of cards so close that the model and the router will confuse them.

Closeness is the cosine of the stored card embeddings (the same vectors stage 2 ranks with);
each pair is shown as ``lookalike_pairs.py`` renders it.

Nothing is computed on the request path. A background thread (``LookalikeCache``) keeps,
per namespace, each tool's nearest neighbours above a floor (``neighbours.py``: in full once,
then only the rows a write changed) and the best ``MAX_PAIRS`` pairs drawn from them, ready
to answer; a request filters that list by threshold and limit. Until a namespace's first
computation is done, or while a newer snapshot is being taken in, the answer says
``complete: false`` and holds what there is.
"""

from __future__ import annotations

import heapq
import logging
import threading
from collections.abc import Collection
from dataclasses import dataclass
from itertools import chain

import numpy as np

from app.tools.live_index import IndexManager, Snapshot
from app.tools.lookalike_pairs import LookalikeList, LookalikePair, render_pair
from app.tools.neighbours import Neighbours, full_neighbours, ranked_pairs, update_neighbours
from app.tools.settle import Rebuilder

log = logging.getLogger("toolreach.lookalikes")

# The most pairs one answer may list (GET /v1/lookalikes?limit=…), and so the most kept ready
# per namespace: a namespace's pairs at any threshold are a prefix of its list.
MAX_PAIRS = 500
# Past this share of changed rows, computing every list again is as cheap as an update.
FULL_SHARE = 0.5


@dataclass(frozen=True, eq=False)
class NamespacePairs:
    """One namespace's look-alikes as of ``snapshot``: every tool's list, and the best
    pairs drawn from them, rendered (and as JSON, what an answer sends), most similar first."""

    snapshot: Snapshot
    lists: Neighbours
    sims: np.ndarray  # of ``pairs``, descending (float32, not rounded)
    pairs: tuple[LookalikePair, ...]
    encoded: tuple[bytes, ...]  # each pair's JSON

    def at_least(self, threshold: float, limit: int) -> list[tuple[float, bytes, LookalikePair]]:
        count = int(np.searchsorted(-self.sims, -np.float32(threshold), side="right"))
        chosen = range(min(count, limit))
        return [(-self.pairs[i].similarity, self.encoded[i], self.pairs[i]) for i in chosen]


def unit_rows(snapshot: Snapshot) -> tuple[tuple[str, ...], np.ndarray]:
    """The snapshot's tool names and their unit embedding rows, row for row."""
    return snapshot.index.names, np.asarray(snapshot.index.embeddings, dtype=np.float32)


def changed_rows(before: Snapshot, after: Snapshot) -> set[str]:
    """The tools of ``after`` that ``before`` lacks or held as another card. A card's vector
    is its text's, by the one model: an unchanged card has its vector still. (Its stored
    JSON is compared, the same bytes object for a card no write touched: far cheaper than
    comparing the vectors row by row.)"""
    old, new = before.cards, after.cards
    return {name for name in new if name not in old or old.raw(name) != new.raw(name)}


def compute_lists(
    before: NamespacePairs | None, snapshot: Snapshot, m: int, floor: float
) -> Neighbours:
    """The snapshot's lists: updated from ``before`` when few rows changed, else in full."""
    names, unit = unit_rows(snapshot)
    if before is not None and before.lists.sims.shape[1] == m:
        changed = changed_rows(before.snapshot, snapshot)
        if len(changed) <= FULL_SHARE * len(names):
            old_names = before.snapshot.index.names
            try:
                return update_neighbours(before.lists, old_names, names, unit, changed, floor)
            except ValueError:  # the kept names were laid out in another order
                pass
    return full_neighbours(unit, m, floor)


def namespace_pairs(
    before: NamespacePairs | None, snapshot: Snapshot, namespace: str, m: int, floor: float
) -> NamespacePairs:
    lists = compute_lists(before, snapshot, m, floor)
    sims, a, b = ranked_pairs(lists, MAX_PAIRS)
    names = snapshot.index.names
    pairs = tuple(
        render_pair(snapshot, namespace, names[i], names[j], float(s))
        for s, i, j in zip(sims.tolist(), a.tolist(), b.tolist(), strict=True)
    )
    encoded = tuple(pair.model_dump_json().encode() for pair in pairs)
    return NamespacePairs(snapshot, lists, sims, pairs, encoded)


class LookalikeCache:
    """Every namespace's look-alikes, kept current by a background thread: woken by each
    new snapshot of the live index (``IndexManager.on_publish``), it takes each namespace
    whose snapshot changed; requests only read what it has published."""

    def __init__(self, index: IndexManager, *, neighbours: int, floor: float) -> None:
        self.index, self.neighbours, self.floor = index, neighbours, floor
        self._states: dict[str, NamespacePairs] = {}
        self._computing = threading.Lock()  # one refresh at a time: none loses another's
        # A burst of writes makes one computation.
        self._rebuilder = Rebuilder(
            "lookalikes",
            self.refresh,
            log,
            "computing look-alikes failed; will retry on the next write",
        )
        index.on_publish(self._rebuilder.wake)

    def get(self, namespace: str) -> tuple[NamespacePairs | None, bool]:
        """The namespace's look-alikes, and whether they are those of its current snapshot."""
        state = self._states.get(namespace)
        current = self.index.get(namespace)
        return state, current is None or (state is not None and state.snapshot is current)

    def refresh(self) -> int:
        """Bring every namespace up to its current snapshot; how many were computed. Returns
        once every namespace is as current as when it was called (another refresh running
        at the time is waited for)."""
        with self._computing:
            return self._refresh()

    def _refresh(self) -> int:
        done = 0
        for namespace in sorted(self.index.namespaces()):
            snapshot = self.index.get(namespace)
            state = self._states.get(namespace)
            if snapshot is None or (state is not None and state.snapshot is snapshot):
                continue
            fresh = namespace_pairs(state, snapshot, namespace, self.neighbours, self.floor)
            self._states = {**self._states, namespace: fresh}  # swapped whole, as snapshots
            done += 1
        return done

    def start(self) -> None:
        """Compute every namespace now, then after each burst of writes, in a background
        thread (``app/tools/settle.py``)."""
        self._rebuilder.start()

    def stop(self) -> None:
        self._rebuilder.stop()


def _best(
    cache: LookalikeCache,
    namespace: str | None,
    threshold: float,
    limit: int,
    visible: Collection[str] | None,
) -> tuple[list[tuple[float, bytes, LookalikePair]], bool]:
    names = [namespace] if namespace else sorted(cache.index.namespaces())
    names = [name for name in names if visible is None or name in visible]
    found: list[list[tuple[float, bytes, LookalikePair]]] = []
    complete = True
    for name in names:
        state, current = cache.get(name)
        complete = complete and current
        if state is not None:
            found.append(state.at_least(threshold, limit))
    return heapq.nsmallest(limit, chain(*found), key=lambda p: p[0]), complete  # stable


def lookalikes_in(
    cache: LookalikeCache,
    namespace: str | None,
    threshold: float,
    limit: int = 50,
    visible: Collection[str] | None = None,
) -> LookalikeList:
    """Look-alike pairs of one namespace or of all, most similar first; only of ``visible``
    namespaces (None: every one), so one out of them has none, as an unknown one. Read from
    the cache only; ``complete`` is false while any of them is still being computed."""
    best, complete = _best(cache, namespace, threshold, limit, visible)
    return LookalikeList(pairs=[pair for _, _, pair in best], complete=complete)


def lookalikes_json(
    cache: LookalikeCache,
    namespace: str | None,
    threshold: float,
    limit: int = 50,
    visible: Collection[str] | None = None,
) -> bytes:
    """``lookalikes_in`` as the JSON of a ``LookalikeList``, joined from the pairs' JSON made
    in the background: 500 pairs cost no model building or serialising per request."""
    best, complete = _best(cache, namespace, threshold, limit, visible)
    pairs = b",".join(encoded for _, encoded, _ in best)
    return b'{"pairs":[' + pairs + b'],"complete":' + (b"true" if complete else b"false") + b"}"
