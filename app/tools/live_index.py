"""The in-memory routing index: one immutable snapshot per namespace, swapped whole.

A route reads ``IndexManager.get(namespace)`` and never waits on the database or on a
rebuild: writers build a new snapshot beside the old one and replace a reference, so a
route sees either the old index or the new one, never half of each. ``sync`` pulls every
card changed since the last registry revision it saw, so it also picks up writes made by
other replicas (a background thread polls for them).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from app.db import unit_of_work
from app.embedding.encoders import Encoder, multilingual_dims
from app.routing import RouterConfig, RouterIndex, ToolDoc, embedding_text
from app.routing.index import IndexSegment
from app.tools.catalog import card_to_doc, embed_cards, text_hash
from registry import repository
from registry.calls import value_problem
from registry.card import TRUSTED, ToolCard
from registry.formats import FORMATS, could_be_exported, exported_name

log = logging.getLogger("toolreach.index")


class CardStore(Mapping[str, ToolCard]):
    """A namespace's cards kept as compact JSON and decoded when read.

    A card object with its parameter schema as Python dicts takes several times the memory
    of its JSON (docs/BENCHMARKS.md), and a route reads at most k cards (decoded without
    re-checking the schema: it was checked when written).
    """

    __slots__ = ("_raw",)

    def __init__(self, raw: Mapping[str, bytes]) -> None:
        self._raw = raw

    @staticmethod
    def encode(card: ToolCard) -> bytes:
        return card.model_dump_json(exclude_defaults=True).encode()

    def __getitem__(self, name: str) -> ToolCard:
        return ToolCard.model_validate_json(self._raw[name], context=TRUSTED)

    def raw(self, name: str) -> bytes:
        """The card's stored JSON, undecoded (equal bytes: the same card)."""
        return self._raw[name]

    def __contains__(self, name: object) -> bool:
        return name in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


@dataclass
class _Namespace:
    """The mutable working copy a sync edits; never read by routes.

    ``cards`` and ``summaries`` are the namespace's current cards; ``changed`` the names a
    sync has seen change since the last published index (name → text hash of a live card's
    embedded text, ``None`` for a deleted one). Each vector is held once, in the published
    index's matrix: the changed cards' vectors are read from the database into the segment
    that a merge adds.
    """

    cards: dict[str, bytes] = field(default_factory=dict)  # CardStore.encode(card)
    summaries: dict[str, str] = field(default_factory=dict)
    changed: dict[str, str | None] = field(default_factory=dict)

    def vectors(self, session: Session, model: str, names: list[str], dim: int) -> np.ndarray:
        """The stored vectors of the changed, live cards ``names``, row for row."""
        matrix = np.empty((len(names), dim), dtype=np.float32)
        for start in range(0, len(names), 1000):
            chunk = names[start : start + 1000]
            hashes = [self.changed[name] for name in chunk]
            stored = repository.get_embeddings(session, model, (h for h in hashes if h))
            for row, text in enumerate(hashes, start=start):
                matrix[row] = np.frombuffer(stored[text], dtype=np.float32)  # type: ignore[index]
        matrix.flags.writeable = False  # the index may keep it as it is (MergePlan.rows)
        return matrix


def _docs(cards: CardStore, names: list[str]) -> Iterator[ToolDoc]:
    """The router's view of each card, one decoded card at a time."""
    for name in names:
        yield card_to_doc(cards[name])


@dataclass(frozen=True)
class Snapshot:
    """What routes and validation read for one namespace; never mutated once published."""

    index: RouterIndex
    cards: CardStore
    # Each card's summary, what a route's answer shows (without decoding the card).
    summaries: Mapping[str, str] = field(default_factory=dict)
    memo: dict[str, Any] = field(default_factory=dict)  # values derived lazily from the above


class IndexManager:
    def __init__(
        self,
        session_factory: sessionmaker[Session],
        encoder: Encoder,
        config: RouterConfig,
        on_matrix: Callable[[np.ndarray, np.ndarray, np.ndarray], None] | None = None,
    ) -> None:
        self._factory = session_factory
        # Sees each new tool matrix before routes do, with the one it was merged from and
        # the source row of each of its rows (-1: new): CosineBatcher.prepare.
        self._on_matrix = on_matrix
        self.encoder = encoder
        self.config = config
        self._work: dict[str, _Namespace] = {}
        self._snapshots: dict[str, Snapshot] = {}
        self._revision = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._published: list[Callable[[], None]] = []

    def on_publish(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (quickly: it runs under the sync's lock) after each new snapshot."""
        self._published.append(callback)

    @property
    def revision(self) -> int:
        return self._revision

    def get(self, namespace: str) -> Snapshot | None:
        return self._snapshots.get(namespace)

    def namespaces(self) -> dict[str, int]:
        """Every namespace that ever held a tool, with how many it holds now (0: all gone)."""
        return {ns: len(snap.cards) for ns, snap in self._snapshots.items()}

    def tool_count(self, namespace: str) -> int | None:
        """How many tools ``namespace`` holds now; None if it never held one."""
        snapshot = self._snapshots.get(namespace)
        return None if snapshot is None else len(snapshot.cards)

    def names(self, namespace: str) -> list[str]:
        snapshot = self._snapshots.get(namespace)
        return [] if snapshot is None else list(snapshot.cards)

    def has_tool(self, namespace: str, name: str) -> bool:
        """Whether ``namespace`` has a tool card named ``name`` now."""
        snapshot = self._snapshots.get(namespace)
        return snapshot is not None and name in snapshot.cards

    def card(self, namespace: str, name: str) -> ToolCard | None:
        """The card named ``name``, or exported under that name (``exported_name``: an
        agent calls the tool by the name its model was given)."""
        snapshot = self._snapshots.get(namespace)
        if snapshot is None:
            return None
        if name in snapshot.cards:
            return snapshot.cards[name]
        if not could_be_exported(name):  # a typo, most often: no need for the map
            return None
        if "exported_names" not in snapshot.memo:  # once per snapshot; a race computes it twice
            snapshot.memo["exported_names"] = {
                exported: real
                for real in snapshot.cards
                for fmt in FORMATS
                if (exported := exported_name(real, fmt)) != real
            }
        real = snapshot.memo["exported_names"].get(name)
        return None if real is None else snapshot.cards[real]

    def sync(self, at_least: int | None = None) -> int:
        """Apply every change since the last revision seen; returns how many tools changed.

        Each namespace a change touched gets a new index merged from its current one: the
        changed cards are analysed (a segment), the others only laid out again
        (``RouterIndex.merge``), the same index a full build of its cards would be.

        ``at_least``: a revision this process just committed. If a sync already took it in
        (most often the polling thread, woken by the write's own notification while the
        request waited for this lock), there is nothing to read.
        """
        with self._lock:
            if at_least is not None and self._revision >= at_least:
                return 0
            return self._sync()

    def _sync(self) -> int:
        with unit_of_work(self._factory) as session:
            head = repository.current_revision(session)
            if head == self._revision:
                return 0
            touched: set[str] = set()
            changed = 0
            for chunk in repository.changed_since(session, self._revision):
                touched |= self._apply(session, chunk)
                changed += len(chunk)
            self._publish(session, touched)
            self._revision = head
            return changed

    def _apply(self, session: Session, changes: list[repository.Change]) -> set[str]:
        live = [card for _, _, card in changes if card is not None]
        embed_cards(session, self.encoder, live)  # only cards whose text this model lacks
        touched: set[str] = set()
        for namespace, name, card in changes:
            work = self._work.setdefault(namespace, _Namespace())
            touched.add(namespace)
            if card is None:
                work.cards.pop(name, None)
                work.summaries.pop(name, None)
                work.changed[name] = None
                continue
            work.cards[name] = CardStore.encode(card)
            work.summaries[name] = card.summary
            work.changed[name] = text_hash(embedding_text(card_to_doc(card)))
        return touched

    def _publish(self, session: Session, namespaces: set[str]) -> None:
        snapshots = dict(self._snapshots)
        for namespace in namespaces:
            work = self._work[namespace]
            old = snapshots.get(namespace)
            base = (
                RouterIndex.empty(
                    self.encoder.dim,
                    self.config,
                    multilingual_dims(self.encoder),
                    value_check=value_problem,
                )
                if old is None
                else old.index
            )
            cards = CardStore(dict(work.cards))
            added = sorted(name for name, text in work.changed.items() if text is not None)
            vectors = work.vectors(session, self.encoder.name, added, self.encoder.dim)
            segment = IndexSegment.analyse(_docs(cards, added), vectors, self.config.fields)
            index, plan = base.merged(work.changed, segment)
            if self._on_matrix is not None:
                self._on_matrix(index.embeddings, base.embeddings, plan.sources())
            work.changed = {}
            snapshots[namespace] = Snapshot(index, cards, dict(work.summaries))
        self._snapshots = snapshots  # one reference swap: routes see old or new, never half
        for callback in self._published:
            callback()

    def wake(self) -> None:
        """Sync now, on the polling thread (a notification of another replica's write)."""
        self._wake.set()

    def heard(self, payload: str) -> None:
        """A revision announced by a write (``registry.repository.REVISION_CHANNEL``): sync
        unless this index has it already (this replica's own write, synced in its request)."""
        if not payload.isdigit() or int(payload) > self._revision:
            self.wake()

    def start_polling(self, interval: float) -> None:
        """Pick up writes by other replicas every `interval` seconds, or at once when woken
        (``wake``: a notification), off the request path."""

        def loop() -> None:
            failing = False  # the traceback once per outage, then a line per failed poll
            while not self._stop.is_set():
                self._wake.wait(interval)
                self._wake.clear()
                if self._stop.is_set():
                    return
                try:
                    self.sync()
                except Exception as exc:
                    if failing:
                        log.warning("index sync still failing (%s); will retry", type(exc).__name__)
                    else:
                        log.exception("index sync failed; will retry every %g s", interval)
                    failing = True
                else:
                    if failing:
                        log.warning("index sync works again")
                    failing = False

        self._thread = threading.Thread(target=loop, name="index-sync", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
