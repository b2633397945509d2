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
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from app.db import unit_of_work
from app.embedding.encoders import Encoder
from app.routing import step_window
from app.routing.examples import card_examples
from app.routing.memory import QueryMemory
from app.tools.catalog import text_hash
from app.tools.live_index import IndexManager, Snapshot
from registry import repository as card_repository

log = logging.getLogger("toolreach.examples")

EMBED_BATCH = 256


def text_vectors(session: Session, encoder: Encoder, texts: Sequence[str]) -> np.ndarray:
    """The vectors of ``texts`` as a route embeds a step (``step_window``): stored ones read,
    the others embedded in batches and stored, by the hash of the text."""
    texts = [step_window(t) for t in texts]
    hashes = [text_hash(t) for t in texts]
    stored = card_repository.get_embeddings(session, encoder.name, set(hashes))
    missing = sorted({h: t for h, t in zip(hashes, texts, strict=True) if h not in stored}.items())
    for start in range(0, len(missing), EMBED_BATCH):
        chunk = missing[start : start + EMBED_BATCH]
        vectors = np.asarray(encoder.encode([t for _, t in chunk]), dtype=np.float32)
        made = {h: v.tobytes() for (h, _), v in zip(chunk, vectors, strict=True)}
        card_repository.put_embeddings(session, encoder.name, encoder.dim, made)
        stored.update(made)
    matrix = np.empty((len(texts), encoder.dim), dtype=np.float32)
    for row, h in enumerate(hashes):
        matrix[row] = np.frombuffer(stored[h], dtype=np.float32)
    return matrix


def snapshot_examples(
    snapshot: Snapshot, vectors_of: Callable[[Sequence[str]], np.ndarray]
) -> QueryMemory | None:
    """A snapshot's card examples as votes (``vectors_of``: the texts' vectors)."""
    tools: list[str] = []
    texts: list[str] = []
    for name in snapshot.cards:
        for example in snapshot.cards[name].examples:
            if example.strip():
                tools.append(name)
                texts.append(example)
    if not texts:
        return None
    return card_examples(snapshot.index, tools, vectors_of(texts))


class ExampleCache:
    """Every namespace's card examples as the router's votes, rebuilt off the request path."""

    def __init__(
        self, index: IndexManager, session_factory: sessionmaker[Session], encoder: Encoder
    ) -> None:
        self.index = index
        self._factory = session_factory
        self._encoder = encoder
        self._built: Mapping[str, tuple[Snapshot, QueryMemory | None]] = MappingProxyType({})
        self._vectors: dict[str, np.ndarray] = {}  # example text → its vector, last build's
        self._computing = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        index.on_publish(self._wake.set)

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
                built[namespace] = (snapshot, snapshot_examples(snapshot, self._vectors_of))
                done += 1
            self._built = MappingProxyType(built)  # swapped whole; gone namespaces dropped
            kept = sum(len(votes) for _, votes in built.values() if votes is not None)
            if len(self._vectors) > 2 * kept + 1024:  # mostly edited-away examples: drop all
                self._vectors.clear()
            return done

    def _vectors_of(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' vectors: those of the last build from memory, the rest from the
        embeddings table or the encoder."""
        missing = sorted({t for t in texts if t not in self._vectors})
        if missing:
            with unit_of_work(self._factory) as session:
                found = text_vectors(session, self._encoder, missing)
            self._vectors.update(zip(missing, found, strict=True))
        matrix = np.stack([self._vectors[t] for t in texts])
        return matrix

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.is_set():
                try:
                    while self.refresh():  # a write during a build: go again
                        pass
                except Exception:
                    log.exception("embedding card examples failed; will retry on the next write")
                self._wake.wait()
                self._wake.clear()

        self._thread = threading.Thread(target=loop, name="card-examples", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
