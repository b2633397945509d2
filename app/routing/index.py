"""The immutable, in-memory routing index of one namespace.

Everything a route needs is computed here, once, off the request path: the field-weighted BM25
matrix, the unit-norm embedding matrix, each tool's compiled required-parameter rules, the tag
postings and the pinned tools. A change makes a new index, swapped in atomically by the
service; a route only reads.

A new index need not be built from scratch: ``merge`` drops the cards a change removed or
replaced and adds a segment of newly analysed ones (``segments.py``), laying out the kept
cards' analysis, vectors and term counts beside them, and recomputes the BM25 weights with the
statistics of the whole namespace (``postings.py``). The result is the index ``build`` makes
of the same cards in name order, array for array (``tests/unit/test_index_merge.py``).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise

import numpy as np

from app.routing.actions import ABROAD, VERB_STEMS
from app.routing.bm25 import KeywordIndex
from app.routing.lexicon import english_words
from app.routing.penalty import ParamRule
from app.routing.postings import Postings, merge, postings_of, weigh
from app.routing.segments import IndexSegment, MergePlan, doc_tokens, unit_rows
from app.routing.slots import ToolProfile, gathered_ids
from app.routing.spelling import Speller, foreign_beginnings
from app.routing.types import RouterConfig, ToolDoc
from app.routing.values import ValueCheck

__all__ = ["IndexSegment", "RouterIndex", "doc_tokens", "unit_rows"]


@dataclass(frozen=True, eq=False)
class RouterIndex:
    """Immutable snapshot of one namespace's tools, ready to route against."""

    names: tuple[str, ...]
    keyword: KeywordIndex
    embeddings: np.ndarray
    rules: tuple[tuple[ParamRule, ...], ...]
    profiles: tuple[ToolProfile, ...]  # each tool's slots and action (slots.py)
    tags: Postings  # tag (case-folded) → the tools that have it
    pinned: np.ndarray
    positions: dict[str, int]
    config: RouterConfig
    # Each card's CJK share (language.py), and the columns of the vectors a multilingual
    # encoder wrote (None: no part of the encoder reads every language, so no per-pair rule).
    cjk_share: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    multilingual: tuple[int, int] | None = None
    in_name_order: bool = False  # names ascending: what ``merge`` needs and keeps
    value_check: ValueCheck | None = None  # a value against a parameter's schema
    # The patterns of the ids the namespace's cards return, by name (slots.gathered_ids).
    ids: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        docs: Iterable[ToolDoc],
        embeddings: np.ndarray,
        config: RouterConfig,
        multilingual: tuple[int, int] | None = None,
        value_check: ValueCheck | None = None,
    ) -> RouterIndex:
        """Index ``docs`` (unique names) with their ``(len(docs), dim)`` embedding rows, in the
        order given.

        One pass over ``docs``, which may be a generator: the index keeps what routing reads
        (names, BM25 matrix, vectors, compiled parameter rules, tags, pins, each card's CJK
        share) and each card's term counts, never the docs, so a caller can stream 100,000
        cards through without holding them all. ``multilingual``: the ``[start, stop)``
        columns of ``embeddings`` that come from an encoder reading every language (the
        encoder's ``multilingual_dims``). ``value_check`` checks a context or step value
        against a parameter's JSON Schema for the rule check (the service passes the
        registry's validator); without one, values are recognised by their shape alone.
        """
        segment = IndexSegment.analyse(docs, embeddings, config.fields)
        nothing = cls.empty(segment.embeddings.shape[1], config, multilingual, value_check)
        index = nothing._laid_out(MergePlan.appended(len(segment)), segment)
        in_order = all(a < b for a, b in pairwise(index.names))
        return dataclasses.replace(index, in_name_order=in_order)

    @classmethod
    def empty(
        cls,
        dim: int,
        config: RouterConfig,
        multilingual: tuple[int, int] | None = None,
        value_check: ValueCheck | None = None,
    ) -> RouterIndex:
        """An index of no tools, with vectors of ``dim`` dimensions."""
        if multilingual is not None and not 0 <= multilingual[0] < multilingual[1] <= dim:
            raise ValueError(f"multilingual columns {multilingual} outside dimension {dim}")
        nothing = Postings.empty()
        lengths = np.zeros(0, dtype=np.int64)
        return cls(
            names=(),
            keyword=weigh(
                nothing, lengths, method=config.bm25_method, k1=config.bm25_k1, b=config.bm25_b
            ),
            embeddings=np.zeros((0, dim), dtype=np.float32),
            rules=(),
            profiles=(),
            tags=nothing,
            pinned=np.zeros(0, dtype=np.int64),
            positions={},
            config=config,
            cjk_share=np.zeros(0, dtype=np.float32),
            multilingual=multilingual,
            in_name_order=True,
            value_check=value_check,
        )

    def without(self, names: Collection[str]) -> RouterIndex:
        """This index less the tools ``names``: what ``build`` makes of the other cards, in
        this index's order (BM25's statistics recomputed from the kept tools' term counts;
        vectors, rules, tags and pins the kept tools' own). It lets an evaluation take a few
        tools out of a namespace without analysing the others again (``app/cli/no_fit.py``)."""
        gone = np.asarray(
            sorted({self.positions[n] for n in names if n in self.positions}), dtype=np.int64
        )
        old = np.arange(len(self.names), dtype=np.int64)
        old_to_new = old - np.searchsorted(gone, old)
        old_to_new[gone] = -1
        plan = MergePlan(old_to_new, np.zeros(0, dtype=np.int64), len(self.names) - gone.size)
        dim = self.embeddings.shape[1]
        nothing = IndexSegment.analyse((), np.zeros((0, dim), dtype=np.float32), self.config.fields)
        return dataclasses.replace(self._laid_out(plan, nothing), in_name_order=self.in_name_order)

    def merge(self, dropped: Collection[str], segment: IndexSegment) -> RouterIndex:
        """This index less the tools named in ``dropped`` plus the ``segment``'s (whose names
        must not be tools kept), in name order: ``build`` of those cards sorted by name,
        without analysing the kept ones again. The index must be in name order itself."""
        return self.merged(dropped, segment)[0]

    def merged(
        self, dropped: Collection[str], segment: IndexSegment
    ) -> tuple[RouterIndex, MergePlan]:
        """``merge``, and where it put every tool (``MergePlan``)."""
        if not self.in_name_order:
            raise ValueError("merge needs an index in name order (build it from sorted docs)")
        segment = segment.in_name_order()
        gone = {n for n in dropped if n in self.positions}
        if any(n in self.positions and n not in gone for n in segment.names):
            raise ValueError("a merged tool must be dropped from the index first")
        positions = np.asarray([self.positions[n] for n in gone], dtype=np.int64)
        plan = MergePlan.in_name_order(self.names, positions, segment.names)
        return self._laid_out(plan, segment), plan

    def _laid_out(self, plan: MergePlan, segment: IndexSegment) -> RouterIndex:
        """The index of this one's kept tools and ``segment``'s, where ``plan`` puts them."""
        old, config = self, self.config
        names = tuple(plan.objects(old.names, segment.names))
        keyword_postings = merge(old.postings, plan.old_to_new, plan.added.tolist(), segment.terms)
        lengths = plan.rows(old.lengths, segment.lengths)
        tag_counts = [Counter(dict.fromkeys(tags, 1)) for tags in segment.tags]
        flags = plan.rows(old.pinned_flags, segment.pinned)
        dim = old.embeddings.shape[1]
        if segment.embeddings.shape[1] != dim:
            raise ValueError(f"embeddings have dimension {segment.embeddings.shape[1]}, not {dim}")
        return RouterIndex(
            names=names,
            keyword=weigh(
                keyword_postings,
                lengths,
                method=config.bm25_method,
                k1=config.bm25_k1,
                b=config.bm25_b,
            ),
            embeddings=plan.rows(old.embeddings, segment.embeddings),
            rules=tuple(plan.objects(old.rules, segment.rules)),
            profiles=(profiles := tuple(plan.objects(old.profiles, segment.profiles))),
            ids=gathered_ids(profiles),
            tags=merge(old.tags, plan.old_to_new, plan.added.tolist(), tag_counts),
            pinned=np.flatnonzero(flags).astype(np.int64),
            positions=dict(zip(names, range(len(names)), strict=True)),
            config=config,
            cjk_share=plan.rows(old.cjk_share, segment.cjk_share),
            multilingual=old.multilingual,
            in_name_order=True,  # a merge's plan keeps names in order (build checks its own)
            value_check=old.value_check,
        )

    @cached_property
    def speller(self) -> Speller:
        """The namespace's words (each weighted by how many cards use it) and the verbs the
        action reader knows: what a misspelt step word is read as (``spelling.py``); English
        words and other languages' verbs are never read as misspelt. Built at the first
        route that reads it."""
        keyword = self.keyword
        used = np.diff(keyword.indptr)
        known = {term: int(used[i]) for term, i in keyword.vocab.items()}
        for verb in VERB_STEMS:
            known.setdefault(verb, 0)
        english = english_words()
        return Speller.of(known, english, foreign_beginnings(ABROAD, english))

    @property
    def postings(self) -> Postings:
        return postings_of(self.keyword)

    @property
    def lengths(self) -> np.ndarray:
        assert self.keyword.lengths is not None
        return self.keyword.lengths

    @property
    def pinned_flags(self) -> np.ndarray:
        flags = np.zeros(len(self.names), dtype=bool)
        flags[self.pinned] = True
        return flags

    def __len__(self) -> int:
        return len(self.names)

    def eligible(self, tags: Sequence[str] | None) -> np.ndarray | None:
        """Indices of the tools having every tag in ``tags``; ``None`` means all tools."""
        if not tags:
            return None
        selected: np.ndarray | None = None
        for tag in {t.casefold() for t in tags}:
            ids = self.tags.of(tag).astype(np.int64)
            selected = ids if selected is None else np.intersect1d(selected, ids)
        return selected
