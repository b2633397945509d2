"""Writing tool cards: parse any accepted format, check, embed in batches, store."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import ValidationError
from sqlalchemy.orm import Session, sessionmaker

from app.db import unit_of_work
from app.embedding.batching import INTERACTIVE_TEXTS, BatchingEncoder
from app.embedding.encoders import Encoder
from app.keys.scope import require_writable
from app.routing import ToolDoc, embedding_text
from registry import repository
from registry.card import ToolCard, first_sentence
from registry.errors import InvalidInput
from registry.formats import FormatError, to_card_data
from registry.repository import WriteStatus

EMBED_BATCH = 64


def card_to_doc(card: ToolCard) -> ToolDoc:
    """What the router reads of a card.

    A summary that is just the description's first sentence (the default when a card has
    none) is left out: it would only count that sentence twice, in BM25 and in the embedded
    text. The weights were tuned on cards without summaries (docs/ROUTING.md).
    """
    derived = card.summary == first_sentence(card.description)
    hints = card.annotations.model_dump(exclude_none=True) if card.annotations else {}
    return ToolDoc(
        name=card.name,
        summary="" if derived else card.summary,
        description=card.description,
        tags=tuple(card.tags),
        parameters=card.parameters,
        examples=tuple(card.examples),
        pinned=card.pinned,
        operation=_operation(card),
        annotations={k: v for k, v in hints.items() if isinstance(v, bool)},
        returns=card.returns,
    )


_OPERATION = re.compile(r"^(GET|PUT|POST|DELETE|OPTIONS|HEAD|PATCH|TRACE) /\S*$")


def _operation(card: ToolCard) -> str:
    """``METHOD /path`` of an imported OpenAPI operation (its source's ``ref``), else ``""``."""
    ref = card.source.ref if card.source is not None else ""
    return ref if _OPERATION.match(ref) else ""


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def pydantic_problems(exc: ValidationError) -> list[dict[str, Any]]:
    return [
        {"loc": list(err["loc"]), "message": err["msg"], "type": err["type"]}
        for err in exc.errors()
    ]


def parse_card(item: Any, namespace: str | None = None) -> ToolCard:
    """A card from a native card or an OpenAI, Anthropic or MCP tool; InvalidInput if bad."""
    if not isinstance(item, Mapping):
        raise InvalidInput(
            "a tool must be a JSON object", [{"loc": [], "message": "not an object"}]
        )
    try:
        return ToolCard.model_validate(to_card_data(item, namespace=namespace))
    except FormatError as exc:
        raise InvalidInput(str(exc), [{"loc": [], "message": str(exc)}]) from None
    except ValidationError as exc:
        raise InvalidInput("the tool card is invalid", pydantic_problems(exc)) from None


@dataclass
class ParsedBatch:
    cards: list[ToolCard] = field(default_factory=list)
    rejects: list[dict[str, Any]] = field(default_factory=list)


class BatchParser:
    """Parses items one at a time (``add``), collecting each bad one (index, name, problems)
    instead of stopping, and a name given twice; ``on_cards(batch, cards)`` hears of the good
    cards every ``EMBED_BATCH`` of them, and of the last ones at ``finish``. A card in a
    namespace out of ``writable`` (None: every one) stops it: Forbidden."""

    def __init__(
        self,
        namespace: str | None,
        on_cards: Callable[[ParsedBatch, list[ToolCard]], None] | None = None,
        writable: Collection[str] | None = None,
    ) -> None:
        self.namespace = namespace
        self.writable = writable
        self.batch = ParsedBatch()
        self._on_cards = on_cards
        self._told = 0
        self._seen: dict[tuple[str, str], int] = {}

    def add(self, index: int, item: Any) -> None:
        batch = self.batch
        name = item.get("name") if isinstance(item, Mapping) else None
        if name is None and isinstance(item, Mapping) and isinstance(item.get("function"), Mapping):
            name = item["function"].get("name")
        try:
            card = parse_card(item, self.namespace)
        except InvalidInput as exc:
            self.reject(index, name, exc.details)
            return
        require_writable(card.namespace, self.writable)
        key = (card.namespace, card.name)
        if key in self._seen:
            problem = {
                "loc": ["name"],
                "message": f"duplicate of item {self._seen[key]} in this batch",
            }
            self.reject(index, card.name, [problem])
            return
        self._seen[key] = index
        batch.cards.append(card)
        if self._on_cards is not None and len(batch.cards) - self._told >= EMBED_BATCH:
            self._on_cards(batch, batch.cards[self._told :])
            self._told = len(batch.cards)

    def reject(self, index: int, name: object, problems: Any) -> None:
        self.batch.rejects.append({"index": index, "name": name, "problems": problems})

    def finish(self) -> ParsedBatch:
        if self._on_cards is not None and len(self.batch.cards) > self._told:
            self._on_cards(self.batch, self.batch.cards[self._told :])
            self._told = len(self.batch.cards)
        return self.batch


def parse_batch(
    items: Sequence[Any],
    namespace: str | None,
    on_cards: Callable[[ParsedBatch, list[ToolCard]], None] | None = None,
    writable: Collection[str] | None = None,
) -> ParsedBatch:
    """Parse every item; collect each bad one (index, name, problems) instead of stopping.

    ``on_cards(batch, cards)`` hears of the good cards every ``EMBED_BATCH`` of them, and of
    the last ones at the end. A card in a namespace out of ``writable`` (None: every one)
    stops it: Forbidden.
    """
    parser = BatchParser(namespace, on_cards, writable)
    for index, item in enumerate(items):
        parser.add(index, item)
    return parser.finish()


class CardEmbedding:
    """The vectors cards still need, being made as the cards come (``add``); ``store``
    writes them.

    An encoder that runs several model calls at once (``parallel`` > 1: the service's
    batching encoder over ONNX/USE) gets each chunk of ``EMBED_BATCH`` texts as soon as it is
    added, on ``parallel`` threads of its own (the encoder runs up to ``parallel - 1`` of them
    at once, leaving routes a slot: app/embedding/batching.py): the caller's thread is
    free meanwhile to parse the next cards or write their rows. Any other encoder runs in
    ``store``.

    Where the vectors go: with ``sessions`` (a session factory), each lookup and each
    chunk's vectors are their own short transaction, so no connection is held while the
    model runs and a write's transaction starts only when its vectors are stored (vectors
    are keyed by model and text hash: one stored for a write that then fails is simply there
    for the next write of that text). Without, they go in the session the caller passes to
    ``add`` and ``store``, all or nothing with its rows.
    """

    def __init__(
        self,
        session: Session | None,
        encoder: Encoder,
        cards: Iterable[ToolCard] = (),
        *,
        sessions: sessionmaker[Session] | None = None,
    ) -> None:
        self._encoder = encoder
        self._sessions = sessions
        self._chunks: list[list[tuple[str, str]]] = []
        self._futures: list[Future[np.ndarray]] = []
        self._stored = 0  # chunks already stored
        self._hashes: set[str] = set()
        self._texts = 0  # texts queued so far: past INTERACTIVE_TEXTS, every chunk is bulk
        workers = int(getattr(encoder, "parallel", 1))
        self._pool = (
            ThreadPoolExecutor(workers, thread_name_prefix="embed") if workers > 1 else None
        )
        self.add(session, cards)

    @contextmanager
    def _session(self, session: Session | None) -> Iterator[Session]:
        if self._sessions is None:
            assert session is not None, "a CardEmbedding without sessions needs the caller's"
            yield session
        else:
            with unit_of_work(self._sessions) as own:
                yield own

    def add(self, session: Session | None, cards: Iterable[ToolCard]) -> None:
        """Queue the texts of ``cards`` that neither this model's stored vectors nor an
        earlier ``add`` cover."""
        texts = {text_hash(t): t for t in (embedding_text(card_to_doc(c)) for c in cards)}
        texts = {h: t for h, t in texts.items() if h not in self._hashes}
        if not texts:
            return
        with self._session(session) as lookup:
            known = repository.embedded_hashes(lookup, self._encoder.name, texts)
        missing = [(h, t) for h, t in texts.items() if h not in known]
        self._hashes.update(texts)
        self._texts += len(missing)
        for start in range(0, len(missing), EMBED_BATCH):
            chunk = missing[start : start + EMBED_BATCH]
            self._chunks.append(chunk)
            if self._pool is not None:
                self._futures.append(self._pool.submit(self._embed, chunk))

    def _embed(self, chunk: list[tuple[str, str]]) -> np.ndarray:
        texts = [t for _, t in chunk]
        if isinstance(self._encoder, BatchingEncoder):  # an import's short last chunk is bulk too
            interactive = self._texts <= INTERACTIVE_TEXTS
            return np.asarray(self._encoder.encode(texts, interactive), dtype=np.float32)
        return np.asarray(self._encoder.encode(texts), dtype=np.float32)

    def store(
        self, session: Session | None = None, progress: Callable[[int], None] | None = None
    ) -> None:
        """Wait for each chunk's vectors and store them; a model error raises. Chunks
        stored by an earlier call are not stored again."""
        try:
            for i in range(self._stored, len(self._chunks)):
                chunk = self._chunks[i]
                vectors = self._futures[i].result() if self._futures else self._embed(chunk)
                with self._session(session) as target:
                    repository.put_embeddings(
                        target,
                        self._encoder.name,
                        self._encoder.dim,
                        {h: vec.tobytes() for (h, _), vec in zip(chunk, vectors, strict=True)},
                    )
                self._stored = i + 1
                if progress is not None:
                    progress(len(chunk))
        finally:
            self.close()

    def close(self) -> None:
        """Stop: the chunks not yet started are dropped (a failure elsewhere ends the write)."""
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)


def embed_cards(
    session: Session,
    encoder: Encoder,
    cards: Iterable[ToolCard],
    progress: Callable[[int], None] | None = None,
) -> None:
    """Store an embedding for every card text not yet embedded with this model, in batches."""
    CardEmbedding(session, encoder, cards).store(session, progress)


def embed_first(
    sessions: sessionmaker[Session],
    encoder: Encoder,
    cards: Iterable[ToolCard],
    progress: Callable[[int], None] | None = None,
) -> CardEmbedding:
    """Store the vectors ``cards`` lack before their write begins, in short transactions of
    their own (``CardEmbedding`` with ``sessions``): the write then holds the registry's
    revision lock, and a pooled connection, only while it writes rows."""
    embedding = CardEmbedding(None, encoder, cards, sessions=sessions)
    embedding.store(None, progress)
    return embedding


def write_cards(
    session: Session,
    encoder: Encoder,
    cards: Sequence[ToolCard],
    *,
    create_only: bool = False,
    progress: Callable[[int], None] | None = None,
    embedding: CardEmbedding | None = None,
) -> list[WriteStatus]:
    """Write cards in the caller's transaction: all land or none (the caller commits).

    The cards' vectors are made and stored first (``CardEmbedding``; ``embedding``, if
    given, is one already making them, as ``import_items`` starts it, or done, as
    ``embed_first`` leaves it); only then is the registry's revision row locked
    (``next_revision``: writers serialise) for the rows. Until 2026-12, the model ran while
    the lock was held: a 2,000-tool import held back every other write for 10 s.
    """
    if not cards:
        if embedding is not None:
            embedding.close()
        return []
    if embedding is None:
        embedding = CardEmbedding(session, encoder, cards)
    embedding.store(session, progress)
    revision = repository.next_revision(session)
    statuses = repository.write_cards(session, list(cards), revision, create_only=create_only)
    session.info["registry_revision"] = revision  # what the request's sync waits for
    return statuses


def delete_card(session: Session, namespace: str, name: str) -> None:
    revision = repository.next_revision(session)
    repository.delete_tool(session, namespace, name, revision)
    session.info["registry_revision"] = revision  # what the request's sync waits for


def import_items(
    session: Session,
    encoder: Encoder,
    items: Sequence[Any],
    namespace: str | None,
    writable: Collection[str] | None = None,
    *,
    sessions: sessionmaker[Session] | None = None,
) -> tuple[ParsedBatch, list[WriteStatus] | None]:
    """Parse every item and, if none is bad, write them all (``None`` statuses otherwise:
    nothing is written). The model starts on the first parsed cards while the rest are
    parsed; a bad item stops it, a card out of ``writable`` too (Forbidden). ``sessions``:
    store the vectors in transactions of their own, before ``session`` is used at all
    (``CardEmbedding``)."""
    embedding = CardEmbedding(None if sessions else session, encoder, sessions=sessions)
    target = None if sessions else session
    try:
        batch = parse_batch(
            items,
            namespace,
            on_cards=lambda b, cards: None if b.rejects else embedding.add(target, cards),
            writable=writable,
        )
        if batch.rejects:
            return batch, None
        embedding.store(target)
        return batch, write_cards(session, encoder, batch.cards, embedding=embedding)
    finally:
        embedding.close()
