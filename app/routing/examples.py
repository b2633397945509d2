"""Card examples: the example requests a card's author wrote vote for their tool, read by the
multilingual part of the encoder.

A card's ``examples`` are "requests that should route here". Inside the card's embedding
they are a few words among many; a step that says the same thing in another language (or
other words) is far closer to one example than to the whole card. So each example is kept
as its own vector — the **multilingual columns** of the encoder's vector
(``RouterIndex.multilingual``: the part that reads a step and a card in different languages;
the whole vector for an encoder without such a part) — and each of the best
``examples_pool`` tools by fused score gets the vote of its example most like the step,
exactly as a remembered step votes in query memory (``memory.py``):

    examples(t) = examples_weight · max over t's examples e of
                  clip((cos(step, e) − examples_floor) / (1 − examples_floor), 0, 1)

A step unlike every example (cosine at or below the floor) is ranked as without them; a
namespace whose cards have no examples has no ``examples`` part at all. Pure: numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.routing.index import RouterIndex
from app.routing.memory import QueryMemory, Rows, memory_votes
from app.routing.types import RouterConfig


def example_columns(index: RouterIndex) -> slice:
    """The columns of the encoder's vector that card examples are compared on."""
    return slice(None) if index.multilingual is None else slice(*index.multilingual)


def example_dim(index: RouterIndex) -> int:
    """How many columns an example vector has."""
    start, stop, _ = example_columns(index).indices(index.embeddings.shape[1])
    return stop - start


EXAMPLE_DIMS = 128  # the principal directions example vectors are kept on (as query memory)


def card_examples(
    index: RouterIndex,
    tools: Sequence[str],
    vectors: Rows,
    basis: np.ndarray | None = None,
) -> QueryMemory | None:
    """The examples of a namespace's cards as votes (``tools[i]`` owns example row
    ``vectors[i]``, a whole encoder vector of any float type; a matrix or a sequence of
    rows, read a chunk at a time), kept on their ``EXAMPLE_DIMS`` principal directions or on
    ``basis`` (an earlier build's); ``None`` without any."""
    if len(tools) == 0:
        return None
    ones = np.ones(len(tools), dtype=np.float32)
    columns = example_columns(index)
    return QueryMemory.build(tools, vectors, ones, EXAMPLE_DIMS, basis, columns)


def examples_contribution(
    examples: QueryMemory,
    index: RouterIndex,
    cols: np.ndarray,
    total: np.ndarray,
    query_vec: np.ndarray,
    config: RouterConfig,
) -> np.ndarray:
    """The examples part of the tools ``cols`` (``total``: their score before it):
    ``examples_weight`` times the best vote of their examples, for the best
    ``examples_pool`` of them; 0 for the others."""
    part = np.zeros(total.size, dtype=np.float32)
    pool = min(config.examples_pool, total.size)
    step = np.asarray(query_vec, dtype=np.float32).reshape(-1, index.embeddings.shape[1])[0]
    step = step[example_columns(index)]
    norm = float(np.linalg.norm(step))
    if pool <= 0 or config.examples_weight == 0.0 or norm == 0.0:
        return part
    top = np.argpartition(-total, pool - 1)[:pool] if pool < total.size else np.arange(pool)
    picked = [index.names[c] for c in cols[top].tolist()]
    votes = memory_votes(examples, picked, step / np.float32(norm), config.examples_floor)
    part[top] = np.float32(config.examples_weight) * votes
    return part
