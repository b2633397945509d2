"""Postings that change by a few documents at a time, and BM25 weights recomputed from them.

A card's BM25 weights depend on every other card of its namespace: the idf of each term on how
many cards hold it and how many cards there are, the length normalisation on the average card
length. A card written or deleted moves every weight, so an index cannot just add or drop a
card's column. What does not move is each card's own analysis: its terms, their counts and its
length. ``Postings`` keep those, term by term (CSC, documents ascending within a term);
``merge`` drops some documents and adds others without analysing anyone again, and ``weigh``
recomputes every weight from the counts in a few vectorised passes.

``weigh`` does the float operations of bm25s's indexer (Lù 2024) in the same order and the
same types, element by element, so its weights are bit for bit those of a fresh ``bm25s``
build of the same corpus (``tests/unit/test_postings.py`` checks it on every variant).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from bm25s.scoring import _select_idf_scorer, _select_tfc_scorer

from app.routing.bm25 import BM25_METHODS, KeywordIndex

BM25_DELTA = 0.5  # bm25s's default δ of BM25L and BM25+ (the only one ToolReach uses)


@dataclass(frozen=True, slots=True, eq=False)
class Postings:
    """Term-major postings: term ``t``'s documents are ``indices[indptr[t]:indptr[t+1]]``
    (ascending), each with its count. A term no document holds any more keeps its id (and
    an empty list) until ``merge`` prunes it."""

    vocab: dict[str, int]
    indptr: np.ndarray  # int64, len(vocab) + 1
    indices: np.ndarray  # int32 document positions
    counts: np.ndarray  # float32, one per posting

    @classmethod
    def empty(cls) -> Postings:
        return cls({}, np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))

    def document_frequencies(self) -> np.ndarray:
        return np.diff(self.indptr)

    def of(self, term: str) -> np.ndarray:
        """The documents holding ``term`` (a view; empty if none)."""
        t = self.vocab.get(term)
        if t is None:
            return np.zeros(0, dtype=self.indices.dtype)
        return self.indices[self.indptr[t] : self.indptr[t + 1]]


def merge(
    base: Postings,
    old_to_new: np.ndarray,
    positions: Sequence[int],
    added: Sequence[Mapping[str, int]],
) -> Postings:
    """``base`` with its documents renumbered by ``old_to_new`` (-1: dropped; the kept ones
    in their old order), plus document ``positions[i]`` holding the terms ``added[i]``
    (term → count). The result's documents ascend within every term, as a fresh build's."""
    vocab = dict(base.vocab)
    new_terms: list[int] = []
    new_docs: list[int] = []
    new_counts: list[int] = []
    for position, document in zip(positions, added, strict=True):
        for term, count in document.items():
            new_terms.append(vocab.setdefault(term, len(vocab)))
            new_docs.append(position)
            new_counts.append(count)
    add_terms = np.asarray(new_terms, dtype=np.int64)
    add_docs = np.asarray(new_docs, dtype=np.int64)
    add_keys = (add_terms << 32) | add_docs
    order = np.argsort(add_keys)
    add_terms, add_docs, add_keys = add_terms[order], add_docs[order], add_keys[order]
    add_counts = np.asarray(new_counts, dtype=np.float32)[order]
    terms = np.repeat(np.arange(len(base.vocab), dtype=np.int64), np.diff(base.indptr))
    docs = old_to_new[base.indices] if base.indices.size else np.zeros(0, np.int64)
    kept = docs >= 0
    terms, docs, counts = terms[kept], docs[kept], base.counts[kept]
    if add_keys.size:
        at = np.searchsorted((terms << 32) | docs, add_keys)
        terms = np.insert(terms, at, add_terms)
        docs = np.insert(docs, at, add_docs)
        counts = np.insert(counts, at, add_counts)
    frequencies = np.bincount(terms, minlength=len(vocab))
    if len(vocab) > 64 and np.count_nonzero(frequencies == 0) * 2 > len(vocab):
        vocab, terms, frequencies = _prune(vocab, terms, frequencies)
    indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(frequencies, out=indptr[1:])
    return Postings(vocab, indptr, docs.astype(np.int32), counts.astype(np.float32, copy=False))


def _prune(
    vocab: dict[str, int], terms: np.ndarray, frequencies: np.ndarray
) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
    """Forget the terms no document holds any more (renumbering the others in order)."""
    live = frequencies > 0
    new_id = np.cumsum(live) - 1
    kept = {term: int(new_id[t]) for term, t in vocab.items() if live[t]}
    return kept, new_id[terms], frequencies[live]


def weigh(
    postings: Postings, lengths: np.ndarray, *, method: str, k1: float, b: float
) -> KeywordIndex:
    """The eager BM25 index of documents with these postings and lengths (tokens, repeats
    counted), weighted with the statistics of all of them.

    bm25s computes, per document, ``idf[t] · tfc(tf, len(d), mean length)`` in float64 from
    a float32 idf and float32 counts, and stores it as float32; so does this, for every
    posting at once. The idf of a document frequency is computed once, with bm25s's own
    scalar function (``math.log``: numpy's log may differ in the last bit).
    """
    if method not in BM25_METHODS:
        raise ValueError(f"unknown BM25 method {method!r}; choose one of {BM25_METHODS}")
    n_docs = int(lengths.size)
    empty = np.zeros(0, dtype=np.float32)
    if postings.indices.size == 0:
        return KeywordIndex(
            postings.vocab, empty, postings.indices, postings.indptr, n_docs, None,
            postings.counts, lengths,
        )  # fmt: skip
    idf_of, tfc_of = _select_idf_scorer(method), _select_tfc_scorer(method)
    frequencies = postings.document_frequencies()
    average = lengths.mean()  # as bm25s: the mean of an integer array, in float64
    distinct = np.unique(frequencies[frequencies > 0])
    exact = {int(df): idf_of(int(df), N=n_docs) for df in distinct}
    idf_table = np.zeros(int(distinct[-1]) + 1, dtype=np.float32)
    for df, value in exact.items():
        idf_table[df] = value
    term_idf = idf_table[frequencies]  # float32 per term; 0 for a term no document holds
    terms = np.repeat(np.arange(frequencies.size), frequencies)
    docs = postings.indices
    tfc = tfc_of(
        tf_array=postings.counts, l_d=lengths[docs], l_avg=average, k1=k1, b=b, delta=BM25_DELTA
    )
    scores = term_idf[terms] * tfc
    nonoccurrence = None
    if method in ("bm25l", "bm25+"):
        unseen = tfc_of(tf_array=0, l_d=average, l_avg=average, k1=k1, b=b, delta=BM25_DELTA)
        table = np.zeros(idf_table.size, dtype=np.float32)
        for df, value in exact.items():
            table[df] = value * unseen
        nonoccurrence = table[frequencies]
        nonoccurrence[frequencies == 0] = 0.0
        scores = scores - nonoccurrence[terms]
    return KeywordIndex(
        vocab=postings.vocab,
        data=scores.astype(np.float32),
        indices=docs,
        indptr=postings.indptr,
        n_docs=n_docs,
        nonoccurrence=nonoccurrence,
        tf=postings.counts,
        lengths=lengths,
    )


def postings_of(index: KeywordIndex) -> Postings:
    """The counts an index was weighed from (an index built by ``weigh``)."""
    if index.tf is None:
        raise ValueError("this keyword index keeps no term counts (not built by weigh)")
    return Postings(index.vocab, index.indptr, index.indices, index.tf)
