"""Look-alike tools: pairs of cards so close that the model and the router will confuse them.

Closeness is the cosine of the stored card embeddings (the same vectors stage 2 ranks with);
each pair comes with the keywords the two cards share, the card fields that differ, and a
hint for the maintainer: usually a "when not to use me" line naming the other tool.
Computed in row blocks (never the whole n×n matrix) and memoised on the immutable snapshot.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterator

import numpy as np
from pydantic import BaseModel

from app.routing.text import STOPWORDS, words
from app.tools.live_index import IndexManager, Snapshot
from registry.card import ToolCard

COMPARED_FIELDS = ("summary", "description", "parameters", "returns", "errors", "tags", "examples")
MAX_KEYWORDS = 12
BLOCK_ROWS = 512


class LookalikePair(BaseModel):
    namespace: str
    a: str
    b: str
    similarity: float
    shared_keywords: list[str]
    differing_fields: list[str]
    hint: str


class LookalikeList(BaseModel):
    """The body of ``GET /v1/lookalikes``."""

    pairs: list[LookalikePair]


def keywords(card: ToolCard) -> set[str]:
    """Content words of the name, summary, description and tags (no stop words, 3+ letters)."""
    text = " ".join([card.name, card.summary, card.description, *card.tags])
    return {w for w in words(text) if len(w) >= 3 and w not in STOPWORDS and not w.isdigit()}


def differing_fields(a: ToolCard, b: ToolCard) -> list[str]:
    return [f for f in COMPARED_FIELDS if getattr(a, f) != getattr(b, f)]


def _names(card: ToolCard, other: str) -> bool:
    """Does the card's text already name the other tool?"""
    return other.lower() in f"{card.summary} {card.description}".lower()


def hint(a: ToolCard, b: ToolCard) -> str:
    a_names_b, b_names_a = _names(a, b.name), _names(b, a.name)
    if a_names_b and b_names_a:
        text = "both cards name each other; make the difference concrete in their summaries"
    elif a_names_b:
        text = f"add a 'when not to use me' line to {b.name} naming {a.name}"
    elif b_names_a:
        text = f"add a 'when not to use me' line to {a.name} naming {b.name}"
    else:
        text = (
            f"add a 'when not to use me' line to {a.name} naming {b.name}, "
            f"and to {b.name} naming {a.name}"
        )
    if a.parameters == b.parameters:
        text += "; their parameters are identical: if they do the same thing, merge them"
    return text


def _close_pairs(matrix: np.ndarray, threshold: float) -> Iterator[tuple[float, int, int]]:
    """(cosine, i, j) for i < j with cosine ≥ threshold, one block of rows at a time."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = matrix / np.where(norms == 0, 1.0, norms)
    for start in range(0, len(unit), BLOCK_ROWS):
        sims = unit[start : start + BLOCK_ROWS] @ unit.T
        rows, cols = np.nonzero(sims >= threshold)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            if c > start + r:
                yield float(sims[r, c]), start + r, c


def _pair(snapshot: Snapshot, namespace: str, a: str, b: str, similarity: float) -> LookalikePair:
    card_a, card_b = snapshot.cards[a], snapshot.cards[b]
    shared = sorted(keywords(card_a) & keywords(card_b))[:MAX_KEYWORDS]
    return LookalikePair(
        namespace=namespace,
        a=a,
        b=b,
        similarity=round(similarity, 4),
        shared_keywords=shared,
        differing_fields=differing_fields(card_a, card_b),
        hint=hint(card_a, card_b),
    )


def card_vectors(snapshot: Snapshot) -> tuple[list[str], np.ndarray]:
    """The snapshot's tool names and their stored embeddings, row for row."""
    index = snapshot.index
    return list(index.names), np.asarray(index.embeddings, dtype=np.float32)


def find_lookalikes(
    snapshot: Snapshot, *, threshold: float = 0.8, limit: int = 50
) -> list[LookalikePair]:
    """The `limit` most similar pairs at or above `threshold`, most similar first."""
    key = f"lookalikes:{threshold}:{limit}"
    if key not in snapshot.memo:
        names, matrix = card_vectors(snapshot)
        best = heapq.nlargest(limit, _close_pairs(matrix, threshold))
        namespace = next(iter(snapshot.cards.values())).namespace if snapshot.cards else ""
        snapshot.memo[key] = [
            _pair(snapshot, namespace, min(names[i], names[j]), max(names[i], names[j]), sim)
            for sim, i, j in best
        ]
    pairs: list[LookalikePair] = snapshot.memo[key]
    return list(pairs)


def lookalikes_in(
    index: IndexManager,
    namespace: str | None,
    threshold: float,
    limit: int = 50,
    visible: Collection[str] | None = None,
) -> list[LookalikePair]:
    """Look-alike pairs of one namespace or of all, most similar first; only of ``visible``
    namespaces (None: every one), so one out of them has none, as an unknown one."""
    names = [namespace] if namespace else sorted(index.namespaces())
    names = [name for name in names if visible is None or name in visible]
    pairs: list[LookalikePair] = []
    for name in names:
        snapshot = index.get(name)
        if snapshot is not None:
            pairs += find_lookalikes(snapshot, threshold=threshold, limit=limit)
    return sorted(pairs, key=lambda p: -p.similarity)[:limit]


def list_lookalikes(
    index: IndexManager,
    namespace: str | None,
    threshold: float,
    limit: int,
    visible: Collection[str] | None = None,
) -> LookalikeList:
    """``GET /v1/lookalikes``: the pairs of ``lookalikes_in``, as the answer lists them."""
    return LookalikeList(pairs=lookalikes_in(index, namespace, threshold, limit, visible))
