"""Card examples as vectors, per namespace, kept current in the background.

Each card's ``examples`` (requests that should route to it) are embedded one by one with
the service's encoder — as a route embeds a step — and handed to the router as votes
(``app/routing/examples.py``). Woken by each new snapshot of the live index, a background
thread takes each namespace whose snapshot changed; the vectors are kept in the embeddings
table by the hash of the text, so an unchanged example is never embedded twice, across
writes, restarts and replicas. Routes only read what it has published: right after a write,
the new card's examples vote once they are embedded (milliseconds for one card).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from app.db import unit_of_work
from app.embedding.encoders import Encoder
from app.routing import step_window
from app.routing.examples import card_examples, example_dim
from app.routing.memory import QueryMemory
from app.tools.catalog import text_hash
from app.tools.live_index import IndexManager, Snapshot
from app.tools.settle import Rebuilder
from registry import repository as card_repository
from registry.card import ToolCard

log = logging.getLogger("toolreach.examples")

EMBED_BATCH = 256
READ_CHUNK = 4096  # stored vectors read at a time (their bytes are freed once copied)
# The dtype ExampleCache keeps each example's whole vector in, between builds (read only to
# rebuild the votes): float16 halves what float32 held (100,000 examples at 384 dims: 148.6
# -> 74 MiB); the votes are built from these rows, so every build reads the same values.
EXAMPLE_DTYPE = np.float16


class TextEncoder(Protocol):
    """What embedding texts needs of the service's encoder (``app.embedding.encoders``)."""

    @property
    def name(self) -> str: ...
    @property
    def dim(self) -> int: ...
    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def text_vectors(
    session: Session,
    encoder: TextEncoder,
    texts: Sequence[str],
    dtype: type[np.floating[Any]] = np.float32,
) -> np.ndarray:
    """The vectors of ``texts`` as a route embeds a step (``step_window``), as ``dtype``:
    stored ones read ``READ_CHUNK`` hashes at a time, the others embedded in batches and
    stored, by the hash of the text. Only the result is whole-size (and its stored bytes
    a chunk at a time): 100,000 examples' first build read them all at once."""
    texts = [step_window(t) for t in texts]
    rows_of: dict[str, list[int]] = {}
    for row, text in enumerate(texts):
        rows_of.setdefault(text_hash(text), []).append(row)
    matrix = np.empty((len(texts), encoder.dim), dtype=dtype)
    hashes = list(rows_of)
    for start in range(0, len(hashes), READ_CHUNK):
        stored = card_repository.get_embeddings(
            session, encoder.name, hashes[start : start + READ_CHUNK]
        )
        for h, raw in stored.items():
            matrix[rows_of.pop(h)] = np.frombuffer(raw, dtype=np.float32)
    missing = sorted((h, texts[rows[0]]) for h, rows in rows_of.items())
    for start in range(0, len(missing), EMBED_BATCH):
        chunk = missing[start : start + EMBED_BATCH]
        vectors = np.asarray(encoder.encode([t for _, t in chunk]), dtype=np.float32)
        made = {h: v.tobytes() for (h, _), v in zip(chunk, vectors, strict=True)}
        card_repository.put_embeddings(session, encoder.name, encoder.dim, made)
        for (h, _), vector in zip(chunk, vectors, strict=True):
            matrix[rows_of[h]] = vector
    return matrix


Examples = tuple[tuple[str, str], ...]  # (tool, example text), in the snapshot's order


def card_example_texts(card: ToolCard) -> tuple[str, ...]:
    return tuple(example for example in card.examples if example.strip())


class ExampleCache:
    """Every namespace's card examples as the router's votes, rebuilt off the request path.

    A rebuild decodes only the cards whose stored JSON changed, rebuilds the votes only when
    some card's examples changed, and keeps the principal directions of the first build; a
    burst of writes makes one rebuild (``app/tools/settle.py``)."""

    def __init__(
        self, index: IndexManager, session_factory: sessionmaker[Session], encoder: Encoder
    ) -> None:
        self.index = index
        self._factory = session_factory
        self._encoder = encoder
        self._built: Mapping[str, tuple[Snapshot, QueryMemory | None]] = MappingProxyType({})
        self._pairs: dict[str, Examples] = {}  # namespace → the pairs its votes were built from
        self._cards: dict[str, dict[str, tuple[bytes, tuple[str, ...]]]] = {}
        self._vectors: dict[str, np.ndarray] = {}  # example text → its vector (EXAMPLE_DTYPE)
        self._computing = threading.Lock()
        # A burst of writes makes one rebuild.
        self._rebuilder = Rebuilder(
            "card-examples",
            self.refresh,
            log,
            "embedding card examples failed; will retry on the next write",
        )
        index.on_publish(self._rebuilder.wake)

    def get(self, namespace: str) -> QueryMemory | None:
        """The namespace's examples as votes (of its latest snapshot built); ``None``: none."""
        built = self._built.get(namespace)
        return None if built is None else built[1]

    def refresh(self) -> int:
        """Bring every namespace up to its current snapshot; how many were rebuilt."""
        with self._computing:
            done, built = 0, {}
            for namespace in sorted(self.index.namespaces()):
                snapshot = self.index.get(namespace)
                if snapshot is None:
                    continue
                old = self._built.get(namespace)
                if old is not None and old[0] is snapshot:
                    built[namespace] = old
                    continue
                built[namespace] = (snapshot, self._votes(namespace, snapshot, old))
                done += 1
            gone = set(self._pairs) - set(built)
            for namespace in gone:
                self._pairs.pop(namespace, None)
                self._cards.pop(namespace, None)
            self._built = MappingProxyType(built)  # swapped whole; gone namespaces dropped
            kept = sum(len(pairs) for pairs in self._pairs.values())
            if len(self._vectors) > 2 * kept + 1024:  # mostly edited-away examples: drop all
                self._vectors.clear()
            return done

    def _votes(
        self,
        namespace: str,
        snapshot: Snapshot,
        old: tuple[Snapshot, QueryMemory | None] | None,
    ) -> QueryMemory | None:
        pairs = self._examples(namespace, snapshot)
        previous = None if old is None else old[1]
        if old is not None and pairs == self._pairs.get(namespace):
            return previous  # no card's examples changed
        self._pairs[namespace] = pairs
        if not pairs:
            return None
        texts = [text for _, text in pairs]
        vectors = self._vectors_of(texts)
        basis = None if previous is None else previous.basis
        if basis is not None and basis.shape[1] != example_dim(snapshot.index):
            basis = None
        return card_examples(snapshot.index, [tool for tool, _ in pairs], vectors, basis)

    def _examples(self, namespace: str, snapshot: Snapshot) -> Examples:
        """Every (tool, example) of the snapshot, decoding only the cards that changed."""
        seen = self._cards.get(namespace, {})
        cards: dict[str, tuple[bytes, tuple[str, ...]]] = {}
        for name in snapshot.cards:
            raw = snapshot.cards.raw(name)
            known = seen.get(name)
            if known is None or known[0] != raw:
                known = (raw, card_example_texts(snapshot.cards[name]))
            cards[name] = known
        self._cards[namespace] = cards
        return tuple((name, text) for name, (_, texts) in cards.items() for text in texts)

    def _vectors_of(self, texts: Sequence[str]) -> list[np.ndarray]:
        """The texts' vectors (``EXAMPLE_DTYPE`` rows): those of the last build from memory,
        the rest from the embeddings table or the encoder. Rows, not one stacked matrix:
        the votes read them a chunk at a time (``QueryMemory.build``)."""
        missing = sorted({t for t in texts if t not in self._vectors})
        if missing:
            with unit_of_work(self._factory) as session:
                found = text_vectors(session, self._encoder, missing, EXAMPLE_DTYPE)
            self._vectors.update(zip(missing, found, strict=True))
        return [self._vectors[t] for t in texts]

    def start(self) -> None:
        """Build every namespace now, then after each burst of writes, in a background
        thread (``app/tools/settle.py``)."""
        self._rebuilder.start()

    def stop(self) -> None:
        self._rebuilder.stop()
