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
from app.routing.memory import QueryMemory, grouping
from app.tools.catalog import text_hash
from app.tools.live_index import IndexManager, Snapshot
from app.tools.settle import Rebuilder
from registry import repository as card_repository
from registry.card import ToolCard

log = logging.getLogger("toolreach.examples")

EMBED_BATCH = 256
READ_CHUNK = 4096  # stored vectors read at a time (their bytes are freed once copied)
# The dtype ExampleCache reads each example's whole vector in to build its votes: float16
# halves the build's transient (100,000 examples at 384 dims: 146 -> 73 MiB); every build
# reads the same values (the votes move by ~1e-4 from float32's: docs/BENCHMARKS.md).
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
    some card's examples changed, and keeps the principal directions of the first build, so
    an unchanged text keeps its row and only new texts' whole vectors are read (none is held
    between builds); a burst of writes makes one
    rebuild (``app/tools/settle.py``)."""

    def __init__(
        self, index: IndexManager, session_factory: sessionmaker[Session], encoder: Encoder
    ) -> None:
        self.index = index
        self._factory = session_factory
        self._encoder = encoder
        self._built: Mapping[str, tuple[Snapshot, QueryMemory | None]] = MappingProxyType({})
        self._pairs: dict[str, Examples] = {}  # namespace → the pairs its votes were built from
        self._cards: dict[str, dict[str, tuple[bytes, tuple[str, ...]]]] = {}
        # namespace → example text → its row in the namespace's votes (QueryMemory.vectors):
        # a rebuild on the same basis reuses an unchanged text's row, reading only new texts.
        self._rows: dict[str, dict[str, int]] = {}
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
                self._rows.pop(namespace, None)
            self._built = MappingProxyType(built)  # swapped whole; gone namespaces dropped
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
            self._rows.pop(namespace, None)
            return None
        tools, texts = [tool for tool, _ in pairs], [text for _, text in pairs]
        basis = None if previous is None else previous.basis
        if basis is not None and basis.shape[1] != example_dim(snapshot.index):
            basis, previous = None, None
        known = self._rows.get(namespace, {}) if previous is not None else {}
        missing = sorted({t for t in texts if t not in known})
        if not known:  # a first build (or a new basis): every text's whole vector, read
            stored = StoredRows(self._factory, self._encoder, texts)  # a chunk at a time
            built = card_examples(snapshot.index, tools, stored, basis)
        else:  # the same basis: unchanged texts keep their rows, new ones are projected
            assert previous is not None
            new = card_examples(snapshot.index, missing, self._read(missing), basis)
            fresh = (
                {}
                if new is None
                else dict(zip(missing, new.vectors[_rows_of(missing)], strict=True))
            )
            rows = [previous.vectors[known[t]] if t in known else fresh[t] for t in texts]
            ones = np.ones(len(tools), dtype=np.float32)
            built = QueryMemory.build(tools, rows, ones, basis=basis, kept=True)
        if built is not None:
            _, order, _ = grouping(tools, np.ones(len(tools)))
            self._rows[namespace] = {texts[i]: row for row, i in enumerate(order.tolist())}
        return built

    def _read(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' whole vectors (``EXAMPLE_DTYPE``), from the embeddings table or the
        encoder; held only while the votes are built."""
        if not texts:
            return np.zeros((0, self._encoder.dim), dtype=EXAMPLE_DTYPE)
        with unit_of_work(self._factory) as session:
            return text_vectors(session, self._encoder, texts, EXAMPLE_DTYPE)

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

    def start(self) -> None:
        """Build every namespace now, then after each burst of writes, in a background
        thread (``app/tools/settle.py``)."""
        self._rebuilder.start()

    def stop(self) -> None:
        self._rebuilder.stop()


def _rows_of(texts: Sequence[str]) -> np.ndarray:
    """Where ``card_examples`` of ``texts`` (each its own tool, so one row each) puts each
    text's row: by tool name, i.e. sorted."""
    _, order, _ = grouping(texts, np.ones(len(texts)))
    rows = np.empty(len(texts), dtype=np.int64)
    rows[order] = np.arange(len(texts))
    return rows


class StoredRows:
    """``texts``' whole vectors (``EXAMPLE_DTYPE``) as a build asks for them, a chunk at a
    time, from the embeddings table or the encoder (``text_vectors``): 100,000 examples'
    first build held them all at once (171 MiB at 896 dims in float16)."""

    def __init__(
        self, factory: sessionmaker[Session], encoder: TextEncoder, texts: Sequence[str]
    ) -> None:
        self._factory, self._encoder, self._texts = factory, encoder, texts

    def __len__(self) -> int:
        return len(self._texts)

    def take(self, rows: np.ndarray) -> np.ndarray:
        picked = [self._texts[i] for i in rows.tolist()]
        with unit_of_work(self._factory) as session:
            return text_vectors(session, self._encoder, picked, EXAMPLE_DTYPE)
