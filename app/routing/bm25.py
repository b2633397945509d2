"""Stage 1 engine: BM25 (Robertson et al. 1994) with bm25s (Lù 2024) as the indexer.

bm25s precomputes every ``idf(t) · tf-part(t, d)`` into a sparse term × document matrix (CSC,
eager scoring); a query's scores are then the sum of the query terms' posting rows, done here
with one ``np.bincount`` instead of bm25s's per-term ``np.add.at``. The variant (``lucene``,
``robertson``, ``atire``, ``bm25l``, ``bm25+``) follows Kamphuis et al., ECIR 2020.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import bm25s
import numpy as np

BM25_METHODS: tuple[str, ...] = ("lucene", "robertson", "atire", "bm25l", "bm25+")


@dataclass(frozen=True, slots=True, eq=False)
class KeywordIndex:
    """The eager BM25 matrix: posting list ``t`` is ``data/indices[indptr[t]:indptr[t+1]]``.

    ``tf`` (each posting's term count) and ``lengths`` (each document's) are what the weights
    were computed from, kept by an index built with ``postings.weigh`` so that a later index
    can add and drop documents without analysing the others again (``None`` otherwise).
    """

    vocab: dict[str, int]
    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    n_docs: int
    nonoccurrence: np.ndarray | None = None
    tf: np.ndarray | None = None
    lengths: np.ndarray | None = None


def build_keyword_index(
    corpus: Sequence[Sequence[str]], *, method: str = "lucene", k1: float = 1.2, b: float = 0.75
) -> KeywordIndex:
    """Index pre-analysed documents with bm25s; unknown ``method`` → ValueError."""
    if method not in BM25_METHODS:
        raise ValueError(f"unknown BM25 method {method!r}; choose one of {BM25_METHODS}")
    empty = np.zeros(0, dtype=np.float32)
    if not any(corpus):
        return KeywordIndex({}, empty, np.zeros(0, np.int32), np.zeros(1, np.int64), len(corpus))
    engine = bm25s.BM25(k1=k1, b=b, method=method)
    engine.index([list(doc) for doc in corpus], show_progress=False, create_empty_token=False)
    scores = engine.scores
    return KeywordIndex(
        vocab=dict(engine.vocab_dict),
        data=np.asarray(scores["data"], dtype=np.float32),
        indices=np.asarray(scores["indices"], dtype=np.int32),
        indptr=np.asarray(scores["indptr"], dtype=np.int64),
        n_docs=int(scores["num_docs"]),
        nonoccurrence=engine.nonoccurrence_array,
    )


def query_term_ids(index: KeywordIndex, tokens: Sequence[str]) -> dict[int, int]:
    """Known query terms as ``term id → count`` (unknown terms contribute nothing)."""
    counts = Counter(index.vocab[t] for t in tokens if t in index.vocab)
    return dict(counts)


def bm25_scores(index: KeywordIndex, tokens: Sequence[str]) -> np.ndarray:
    """BM25 score of every document for the query ``tokens`` (repeated terms count again)."""
    return bm25_row(index, tokens)[0]


def bm25_row(index: KeywordIndex, tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``bm25_scores``, and the documents the query's terms touch: each known term's posting
    list, one after the other (a document appears once per distinct term it contains)."""
    terms = query_term_ids(index, tokens)
    if not terms:
        return np.zeros(index.n_docs, dtype=np.float32), np.zeros(0, dtype=index.indices.dtype)
    slices = [(index.indptr[t], index.indptr[t + 1], c) for t, c in terms.items()]
    rows = np.concatenate([index.indices[s:e] for s, e, _ in slices])
    weights = np.concatenate([index.data[s:e] * c for s, e, c in slices])
    scores = np.bincount(rows, weights=weights, minlength=index.n_docs).astype(np.float32)
    if index.nonoccurrence is not None:
        scores += sum(float(index.nonoccurrence[t]) * c for t, c in terms.items())
    return scores, rows


def matched_in(touched: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """How many distinct query terms each of ``docs`` contains, given the documents the
    query's terms touch (``bm25_row``), counted for a handful of docs."""
    docs = np.asarray(docs)
    if not touched.size or not docs.size:
        return np.zeros(docs.size, dtype=np.int64)
    if docs.size <= 2:
        return (touched[None, :] == docs[:, None]).sum(axis=1)
    # more docs (20 when a model reads the cold top 20): one sort beats comparing each
    ordered = np.sort(touched)
    return np.searchsorted(ordered, docs, "right") - np.searchsorted(ordered, docs, "left")
