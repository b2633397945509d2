"""The immutable, in-memory routing index of one namespace.

Everything a route needs is computed here, once, off the request path: the field-weighted BM25
matrix, the unit-norm embedding matrix, each tool's compiled required-parameter rules, the tag
postings and the pinned tools. A new card means a new index, swapped in atomically by the
service; a route only reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from app.routing.bm25 import KeywordIndex, build_keyword_index
from app.routing.penalty import ParamRule, compile_rules
from app.routing.text import analyse, parameter_text
from app.routing.types import FieldWeights, RouterConfig, ToolDoc
from app.routing.values import ValueCheck


def doc_tokens(doc: ToolDoc, weights: FieldWeights) -> list[str]:
    """The BM25 document of a card: each field's tokens repeated by its weight (BM25F-lite)."""
    param_names, param_descriptions = parameter_text(doc.parameters)
    fields = (
        (doc.name, weights.name),
        (doc.summary, weights.summary),
        (doc.description, weights.description),
        (" ".join(doc.tags), weights.tags),
        (param_names, weights.param_names),
        (param_descriptions, weights.param_descriptions),
        (" ".join(doc.examples), weights.examples),
    )
    tokens: list[str] = []
    for text, weight in fields:
        if weight > 0 and text:
            tokens.extend(analyse(text) * weight)
    return tokens


def unit_rows(embeddings: np.ndarray, n_docs: int) -> np.ndarray:
    """Validate ``(n_docs, dim)``; float32 C-contiguous unit rows (zero rows stay zero).

    Rows that already are (what every encoder returns) are used as given, without a copy.
    """
    matrix = np.asarray(embeddings, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != n_docs:
        raise ValueError(f"embeddings must have shape ({n_docs}, dim), got {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("embeddings contain NaN or infinite values")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    if matrix.flags.c_contiguous and np.allclose(norms[norms > 0], 1.0, atol=1e-4):
        return matrix
    return np.ascontiguousarray(matrix / np.where(norms > 0, norms, 1.0))


@dataclass(frozen=True, eq=False)
class RouterIndex:
    """Immutable snapshot of one namespace's tools, ready to route against."""

    names: tuple[str, ...]
    keyword: KeywordIndex
    embeddings: np.ndarray
    rules: tuple[tuple[ParamRule, ...], ...]
    tags: dict[str, np.ndarray]
    pinned: np.ndarray
    positions: dict[str, int]
    config: RouterConfig
    value_check: ValueCheck | None = None

    @classmethod
    def build(
        cls,
        docs: Iterable[ToolDoc],
        embeddings: np.ndarray,
        config: RouterConfig,
        value_check: ValueCheck | None = None,
    ) -> RouterIndex:
        """Index ``docs`` (unique names) with their ``(len(docs), dim)`` embedding rows.

        One pass over ``docs``, which may be a generator: the index keeps what routing reads
        (names, BM25 matrix, vectors, compiled parameter rules, tags, pins), never the docs,
        so a caller can stream 100,000 cards through without holding them all.
        ``value_check`` checks a context or step value against a parameter's JSON Schema for
        the rule check (the service passes the registry's validator); without one, values
        are recognised by their shape alone.
        """
        names: list[str] = []
        corpus: list[list[str]] = []
        rules: list[tuple[ParamRule, ...]] = []
        postings: dict[str, list[int]] = {}
        pinned: list[int] = []
        for i, doc in enumerate(docs):
            names.append(doc.name)
            corpus.append(doc_tokens(doc, config.fields))
            rules.append(compile_rules(doc.parameters, doc.name))
            for tag in {t.casefold() for t in doc.tags}:
                postings.setdefault(tag, []).append(i)
            if doc.pinned:
                pinned.append(i)
        if len(set(names)) != len(names):
            raise ValueError("tool names must be unique within an index")
        keyword = build_keyword_index(
            corpus, method=config.bm25_method, k1=config.bm25_k1, b=config.bm25_b
        )
        del corpus
        return cls(
            names=tuple(names),
            keyword=keyword,
            embeddings=unit_rows(embeddings, len(names)),
            rules=tuple(rules),
            tags={tag: np.asarray(ids, dtype=np.int64) for tag, ids in postings.items()},
            pinned=np.asarray(pinned, dtype=np.int64),
            positions={name: i for i, name in enumerate(names)},
            config=config,
            value_check=value_check,
        )

    def __len__(self) -> int:
        return len(self.names)

    def eligible(self, tags: Sequence[str] | None) -> np.ndarray | None:
        """Indices of the tools having every tag in ``tags``; ``None`` means all tools."""
        if not tags:
            return None
        selected: np.ndarray | None = None
        for tag in {t.casefold() for t in tags}:
            ids = self.tags.get(tag, np.zeros(0, dtype=np.int64))
            selected = ids if selected is None else np.intersect1d(selected, ids)
        return selected
