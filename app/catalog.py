"""Writing tool cards: parse any accepted format, check, embed in batches, store."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import ValidationError
from sqlalchemy.orm import Session

from app.encoders import Encoder
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
    return ToolDoc(
        name=card.name,
        summary="" if derived else card.summary,
        description=card.description,
        tags=tuple(card.tags),
        parameters=card.parameters,
        examples=tuple(card.examples),
        pinned=card.pinned,
    )


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


def parse_batch(items: Sequence[Any], namespace: str | None) -> ParsedBatch:
    """Parse every item; collect each bad one (index, name, problems) instead of stopping."""
    batch = ParsedBatch()
    seen: dict[tuple[str, str], int] = {}
    for index, item in enumerate(items):
        name = item.get("name") if isinstance(item, Mapping) else None
        if name is None and isinstance(item, Mapping) and isinstance(item.get("function"), Mapping):
            name = item["function"].get("name")
        try:
            card = parse_card(item, namespace)
        except InvalidInput as exc:
            batch.rejects.append({"index": index, "name": name, "problems": exc.details})
            continue
        key = (card.namespace, card.name)
        if key in seen:
            problem = {"loc": ["name"], "message": f"duplicate of item {seen[key]} in this batch"}
            batch.rejects.append({"index": index, "name": card.name, "problems": [problem]})
            continue
        seen[key] = index
        batch.cards.append(card)
    return batch


def embed_cards(
    session: Session,
    encoder: Encoder,
    cards: Iterable[ToolCard],
    progress: Callable[[int], None] | None = None,
) -> None:
    """Store an embedding for every card text not yet embedded with this model, in batches.

    An encoder that runs several model calls at once (``parallel`` > 1: the service's
    batching encoder over ONNX/USE) gets that many chunks in flight, from as many threads;
    the vectors are written here, in order, on the caller's session.
    """
    texts = {text_hash(t): t for t in (embedding_text(card_to_doc(c)) for c in cards)}
    known = repository.embedded_hashes(session, encoder.name, texts)
    missing = [(h, t) for h, t in texts.items() if h not in known]
    chunks = [missing[i : i + EMBED_BATCH] for i in range(0, len(missing), EMBED_BATCH)]

    def embed(chunk: list[tuple[str, str]]) -> np.ndarray:
        return np.asarray(encoder.encode([t for _, t in chunk]), dtype=np.float32)

    workers = min(int(getattr(encoder, "parallel", 1)), len(chunks))
    pool = ThreadPoolExecutor(workers, thread_name_prefix="embed") if workers > 1 else None
    try:
        results = pool.map(embed, chunks) if pool is not None else map(embed, chunks)
        for chunk, vectors in zip(chunks, results, strict=True):
            repository.put_embeddings(
                session,
                encoder.name,
                encoder.dim,
                {h: vec.tobytes() for (h, _), vec in zip(chunk, vectors, strict=True)},
            )
            if progress is not None:
                progress(len(chunk))
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)  # a failure stops the chunks not yet started


def write_cards(
    session: Session,
    encoder: Encoder,
    cards: Sequence[ToolCard],
    *,
    create_only: bool = False,
    progress: Callable[[int], None] | None = None,
) -> list[WriteStatus]:
    """Write cards in the caller's transaction: all land or none (the caller commits)."""
    if not cards:
        return []
    embed_cards(session, encoder, cards, progress)
    revision = repository.next_revision(session)
    statuses = [
        repository.write_card(session, card, revision, create_only=create_only) for card in cards
    ]
    session.info["registry_changed"] = True
    return statuses


def delete_card(session: Session, namespace: str, name: str) -> None:
    repository.delete_tool(session, namespace, name, repository.next_revision(session))
    session.info["registry_changed"] = True
