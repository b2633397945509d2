"""What a change to a namespace adds (``IndexSegment``: cards analysed once, with their
vectors) and where everything goes when it is merged into an index (``MergePlan``).

Analysing a card (tokens for BM25, compiled parameter rules, tags) is most of the cost of an
index, card decoding aside (docs/ROUTING.md). A segment analyses only the
cards a write touched; ``RouterIndex.merge`` then lays the index's own per-card data and the
segment's side by side in name order without analysing anyone again.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from app.routing.language import card_cjk_share
from app.routing.penalty import ParamRule, compile_rules
from app.routing.slots import ToolProfile, compile_profile
from app.routing.text import analyse, parameter_text
from app.routing.types import FieldWeights, ToolDoc

# A merge copies the kept rows of a matrix run by run (one memcpy each) up to this many runs;
# past it (a merge that touches most rows), one gather.
MAX_RUNS = 256
T = TypeVar("T")


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


_CHUNK = 4096  # rows unit_rows checks at a time


def unit_rows(embeddings: np.ndarray, n_docs: int) -> np.ndarray:
    """Validate ``(n_docs, dim)``; float32 C-contiguous unit rows (zero rows stay zero).

    Rows that already are (what every encoder returns) are used as given, without a copy;
    each other row is divided by its norm (row by row: a row's values never depend on the
    other rows, so a card's row is the same whatever index it is merged into).
    """
    matrix = np.asarray(embeddings, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != n_docs:
        raise ValueError(f"embeddings must have shape ({n_docs}, dim), got {matrix.shape}")
    norms = np.empty(n_docs, dtype=np.float32)
    for start in range(0, n_docs, _CHUNK):  # no whole-size temporaries (100,000 × 896: 342 MiB)
        part = matrix[start : start + _CHUNK]
        if not np.isfinite(part).all():
            raise ValueError("embeddings contain NaN or infinite values")
        norms[start : start + len(part)] = np.linalg.norm(part, axis=1)
    scale = (norms > 0) & ~np.isclose(norms, 1.0, atol=1e-4)
    if matrix.flags.c_contiguous and not scale.any():
        return matrix
    matrix = np.array(matrix, dtype=np.float32, order="C")
    matrix[scale] /= norms[scale, None]
    return matrix


@dataclass(frozen=True, eq=False)
class IndexSegment:
    """Cards analysed for the router, not yet in an index: the delta of one change."""

    names: tuple[str, ...]
    terms: tuple[Counter[str], ...]  # BM25 document: token → count (fields weighted)
    lengths: np.ndarray  # int64: tokens per document, repeats counted
    rules: tuple[tuple[ParamRule, ...], ...]
    profiles: tuple[ToolProfile, ...]  # what the values and action evidence read (slots.py)
    tags: tuple[frozenset[str], ...]  # case-folded
    pinned: np.ndarray  # bool
    embeddings: np.ndarray  # (n, dim) unit rows
    cjk_share: np.ndarray  # float32: the CJK share of each card's prose (language.py)

    @classmethod
    def analyse(
        cls, docs: Iterable[ToolDoc], embeddings: np.ndarray, fields: FieldWeights
    ) -> IndexSegment:
        """Analyse ``docs`` (unique names; may be a generator) with their embedding rows."""
        names: list[str] = []
        terms: list[Counter[str]] = []
        lengths: list[int] = []
        rules: list[tuple[ParamRule, ...]] = []
        profiles: list[ToolProfile] = []
        tags: list[frozenset[str]] = []
        pinned: list[bool] = []
        shares: list[float] = []
        for doc in docs:
            tokens = doc_tokens(doc, fields)
            names.append(doc.name)
            terms.append(Counter(tokens))
            lengths.append(len(tokens))
            rules.append(compile_rules(doc.parameters, doc.name))
            profiles.append(compile_profile(doc))
            tags.append(frozenset(t.casefold() for t in doc.tags))
            pinned.append(doc.pinned)
            shares.append(card_cjk_share(doc))
        if len(set(names)) != len(names):
            raise ValueError("tool names must be unique within an index")
        return cls(
            names=tuple(names),
            terms=tuple(terms),
            lengths=np.asarray(lengths, dtype=np.int64),
            rules=tuple(rules),
            profiles=tuple(profiles),
            tags=tuple(tags),
            pinned=np.asarray(pinned, dtype=bool),
            embeddings=unit_rows(embeddings, len(names)),
            cjk_share=np.asarray(shares, dtype=np.float32),
        )

    def __len__(self) -> int:
        return len(self.names)

    def in_name_order(self) -> IndexSegment:
        """The same cards sorted by name (what a merge lays out)."""
        order = sorted(range(len(self.names)), key=self.names.__getitem__)
        if order == list(range(len(order))):
            return self
        return IndexSegment(
            names=tuple(self.names[i] for i in order),
            terms=tuple(self.terms[i] for i in order),
            lengths=self.lengths[order],
            rules=tuple(self.rules[i] for i in order),
            profiles=tuple(self.profiles[i] for i in order),
            tags=tuple(self.tags[i] for i in order),
            pinned=self.pinned[order],
            embeddings=self.embeddings[order],
            cjk_share=self.cjk_share[order],
        )


@dataclass(frozen=True, eq=False)
class MergePlan:
    """Where each document of a merge goes: the kept ones of the old index (``old_to_new``,
    -1 for a dropped one) and the added ones (``added``), in one order of ``size``."""

    old_to_new: np.ndarray  # int64, one per old document
    added: np.ndarray  # int64, one per added document, in the order given
    size: int

    @classmethod
    def in_name_order(
        cls, names: Sequence[str], dropped: np.ndarray, added: Sequence[str]
    ) -> MergePlan:
        """Old ``names`` (sorted) less the ``dropped`` positions, and ``added`` names (sorted,
        none of them a kept name), interleaved in name order."""
        dropped = np.unique(np.asarray(dropped, dtype=np.int64))
        n = len(names)
        old = np.arange(n, dtype=np.int64)
        rank = old - np.searchsorted(dropped, old)  # among the kept, for a kept document
        at = np.asarray([bisect.bisect_left(names, a) for a in added], dtype=np.int64)
        before = at - np.searchsorted(dropped, at)  # kept names that sort before each added
        old_to_new = rank + np.searchsorted(before, rank, side="right")
        old_to_new[dropped] = -1
        positions = before + np.arange(len(added), dtype=np.int64)
        return cls(old_to_new, positions, n - dropped.size + len(added))

    @classmethod
    def appended(cls, n_added: int) -> MergePlan:
        """Everything new, in the order given (what ``RouterIndex.build`` lays out)."""
        return cls(np.zeros(0, dtype=np.int64), np.arange(n_added, dtype=np.int64), n_added)

    def sources(self) -> np.ndarray:
        """For each new position, the old position it came from (-1: an added document)."""
        sources = np.full(self.size, -1, dtype=np.int64)
        old, new = self.kept()
        sources[new] = old
        return sources

    def kept(self) -> tuple[np.ndarray, np.ndarray]:
        """The old positions kept, and their new positions (both ascending)."""
        old = np.flatnonzero(self.old_to_new >= 0)
        return old, self.old_to_new[old]

    def objects(self, old: Sequence[T], added: Sequence[T]) -> list[T]:
        """Per-document Python values (names, rules) laid out in the new order."""
        out = np.empty(self.size, dtype=object)
        if len(old):
            source, target = self.kept()
            values = np.empty(len(old), dtype=object)
            values[:] = list(old)  # (element by element: a value may itself be a tuple)
            out[target] = values[source]
        if len(added):
            values = np.empty(len(added), dtype=object)
            values[:] = list(added)
            out[self.added] = values
        return out.tolist()

    def rows(self, old: np.ndarray, added: np.ndarray) -> np.ndarray:
        """Per-document arrays (a vector, a matrix's rows) laid out in the new order; the
        kept rows are copied run by run. A read-only ``added`` that is the whole result
        already (nothing kept, in order: a first load) is the result, not copied: the
        live index marks the matrix it read so (100,000 × 896: 342 MiB not doubled)."""
        if (
            not added.flags.writeable
            and len(added) == self.size
            and not (self.old_to_new >= 0).any()
            and np.array_equal(self.added, np.arange(self.size))
        ):
            return added
        out = np.empty((self.size, *added.shape[1:]), dtype=added.dtype)
        if self.old_to_new.size:
            source, target = self.kept()
            breaks = np.flatnonzero((np.diff(source) != 1) | (np.diff(target) != 1)) + 1
            if breaks.size < MAX_RUNS:
                for s, t in zip(np.split(source, breaks), np.split(target, breaks), strict=True):
                    if s.size:
                        out[t[0] : t[0] + t.size] = old[s[0] : s[0] + s.size]
            else:
                out[target] = old[source]
        out[self.added] = added
        return out
