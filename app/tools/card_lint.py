"""The lint of cards as they are written (registry/lint.py), with the look-alikes that stand
close to each: its vector against the namespace's live ones, by the service's encoder. Run
after the write, on the write's request only; a route never waits on it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from app.embedding.encoders import l2_normalise
from app.routing import embedding_text
from app.tools.catalog import card_to_doc
from app.tools.live_index import IndexManager
from registry.card import ToolCard
from registry.lint import LintWarning, lint

# A look-alike "stands close" from this cosine: GET /v1/lookalikes' default threshold.
CLOSE = 0.8
# Past this many cards in one write, look-alikes are not sought (each card would be embedded
# a second time); the other checks still run.
MAX_COMPARED = 100


def close_lookalikes(
    index: IndexManager, cards: Sequence[ToolCard], threshold: float = CLOSE
) -> list[list[str]]:
    """For each card, the live tools of its namespace (not itself) whose vectors stand at
    ``threshold`` or closer, closest first."""
    found: list[list[str]] = [[] for _ in cards]
    if not cards or len(cards) > MAX_COMPARED:
        return found
    by_namespace: dict[str, list[int]] = defaultdict(list)
    for i, card in enumerate(cards):
        by_namespace[card.namespace].append(i)
    for namespace, rows in by_namespace.items():
        snapshot = index.get(namespace)
        if snapshot is None or len(snapshot.index) == 0:
            continue
        texts = [embedding_text(card_to_doc(cards[i])) for i in rows]
        vectors = l2_normalise(index.encoder.encode(texts))
        live = np.asarray(snapshot.index.embeddings, dtype=np.float32)
        if live.shape[1] != vectors.shape[1]:
            continue
        sims = vectors @ live.T
        names = snapshot.index.names
        for row, i in zip(range(len(rows)), rows, strict=True):
            order = np.argsort(-sims[row])
            found[i] = [
                names[j]
                for j in order.tolist()
                if sims[row, j] >= threshold and names[j] != cards[i].name
            ][:5]
    return found


def card_warnings(index: IndexManager | None, cards: Sequence[ToolCard]) -> list[list[LintWarning]]:
    """Each card's warnings; ``index`` None: no look-alikes sought (a source's sync)."""
    close = close_lookalikes(index, cards) if index is not None else [[] for _ in cards]
    return [lint(card, near) for card, near in zip(cards, close, strict=True)]
