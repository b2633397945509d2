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
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from app.catalog import card_to_doc, embed_cards, text_hash
from app.db import unit_of_work
from app.encoders import Encoder
from app.routing import RouterConfig, RouterIndex, ToolDoc, embedding_text
from registry import repository
from registry.card import ToolCard

log = logging.getLogger("toolreach.index")


@dataclass
class _Namespace:
    """The mutable working copy a sync edits; never read by routes."""

    cards: dict[str, ToolCard] = field(default_factory=dict)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class Snapshot:
    """What routes and validation read for one namespace; never mutated once published."""

    index: RouterIndex
    cards: dict[str, ToolCard]
    memo: dict[str, Any] = field(default_factory=dict)  # values derived lazily from the above


class IndexManager:
    def __init__(
        self, session_factory: sessionmaker[Session], encoder: Encoder, config: RouterConfig
    ) -> None:
        self._factory = session_factory
        self.encoder = encoder
        self.config = config
        self._work: dict[str, _Namespace] = {}
        self._snapshots: dict[str, Snapshot] = {}
        self._revision = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def revision(self) -> int:
        return self._revision

    def get(self, namespace: str) -> Snapshot | None:
        return self._snapshots.get(namespace)

    def namespaces(self) -> dict[str, int]:
        return {ns: len(snap.cards) for ns, snap in self._snapshots.items()}

    def names(self, namespace: str) -> list[str]:
        snapshot = self._snapshots.get(namespace)
        return [] if snapshot is None else list(snapshot.cards)

    def card(self, namespace: str, name: str) -> ToolCard | None:
        snapshot = self._snapshots.get(namespace)
        return None if snapshot is None else snapshot.cards.get(name)

    def sync(self) -> int:
        """Apply every change since the last revision seen; returns how many tools changed."""
        with self._lock, unit_of_work(self._factory) as session:
            head = repository.current_revision(session)
            if head == self._revision:
                return 0
            changes = repository.changed_since(session, self._revision)
            touched = self._apply(session, changes)
            self._rebuild(touched)
            self._revision = head
            return len(changes)

    def _apply(self, session: Session, changes: list[tuple[str, str, ToolCard | None]]) -> set[str]:
        live = [card for _, _, card in changes if card is not None]
        embed_cards(session, self.encoder, live)  # only cards whose text this model lacks
        texts = {
            c.name + "\0" + c.namespace: text_hash(embedding_text(card_to_doc(c))) for c in live
        }
        stored = repository.get_embeddings(session, self.encoder.name, texts.values())
        touched: set[str] = set()
        for namespace, name, card in changes:
            work = self._work.setdefault(namespace, _Namespace())
            touched.add(namespace)
            if card is None:
                work.cards.pop(name, None)
                work.vectors.pop(name, None)
                continue
            work.cards[name] = card
            vector = stored[texts[name + "\0" + namespace]]
            work.vectors[name] = np.frombuffer(vector, dtype=np.float32)
        return touched

    def _rebuild(self, namespaces: set[str]) -> None:
        snapshots = dict(self._snapshots)
        for namespace in namespaces:
            work = self._work[namespace]
            names = sorted(work.cards)
            docs: list[ToolDoc] = [card_to_doc(work.cards[n]) for n in names]
            matrix = (
                np.vstack([work.vectors[n] for n in names])
                if names
                else np.zeros((0, self.encoder.dim), dtype=np.float32)
            )
            index = RouterIndex.build(docs, matrix, self.config)
            snapshots[namespace] = Snapshot(index, dict(work.cards))
        self._snapshots = snapshots  # one reference swap: routes see old or new, never half

    def start_polling(self, interval: float) -> None:
        """Pick up writes by other replicas every `interval` seconds, off the request path."""

        def loop() -> None:
            while not self._stop.wait(interval):
                try:
                    self.sync()
                except Exception:
                    log.exception("index sync failed; will retry")

        self._thread = threading.Thread(target=loop, name="index-sync", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
