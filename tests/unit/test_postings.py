"""BM25 weights recomputed from kept term counts are bit for bit bm25s's fresh build, for every
variant, also after documents were dropped and added (app/routing/postings.py)."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from app.routing.bm25 import BM25_METHODS, KeywordIndex, bm25_row, build_keyword_index
from app.routing.postings import Postings, merge, weigh

WORDS = [f"w{i}" for i in range(40)]


def corpus(rng: random.Random, n: int) -> list[list[str]]:
    """Documents of 0-30 tokens over a small vocabulary, with repeats (as field weights make)."""
    return [[rng.choice(WORDS) for _ in range(rng.choice([0, 1, 3, 8, 30]))] for _ in range(n)]


def fresh(docs: list[list[str]], method: str) -> KeywordIndex:
    """What ``weigh`` builds from nothing: every document added to empty postings."""
    identity = np.zeros(0, dtype=np.int64)
    postings = merge(Postings.empty(), identity, range(len(docs)), [Counter(d) for d in docs])
    lengths = np.asarray([len(d) for d in docs], dtype=np.int64)
    return weigh(postings, lengths, method=method, k1=1.2, b=0.75)


def assert_same(ours: KeywordIndex, theirs: KeywordIndex) -> None:
    """Every term's postings and weights equal, bit for bit (term ids may differ)."""
    assert ours.n_docs == theirs.n_docs
    live = {t for t, i in ours.vocab.items() if ours.indptr[i + 1] > ours.indptr[i]}
    assert live == set(theirs.vocab)
    for term, j in theirs.vocab.items():
        i = ours.vocab[term]
        a, b = (
            slice(ours.indptr[i], ours.indptr[i + 1]),
            slice(theirs.indptr[j], theirs.indptr[j + 1]),
        )
        np.testing.assert_array_equal(ours.indices[a], theirs.indices[b])
        assert ours.data[a].tobytes() == theirs.data[b].tobytes(), term
        if theirs.nonoccurrence is not None:
            assert ours.nonoccurrence is not None
            assert ours.nonoccurrence[i] == theirs.nonoccurrence[j]
    if theirs.nonoccurrence is None:
        assert ours.nonoccurrence is None


@pytest.mark.parametrize("method", BM25_METHODS)
def test_weights_from_counts_are_bm25s_weights(method: str) -> None:
    rng = random.Random(method)
    for n in (1, 2, 7, 120):
        docs = corpus(rng, n)
        if not any(docs):
            continue
        assert_same(fresh(docs, method), build_keyword_index(docs, method=method, k1=1.2, b=0.75))


@pytest.mark.parametrize("method", ["lucene", "bm25+"])
def test_dropping_and_adding_documents_gives_a_fresh_builds_weights(method: str) -> None:
    rng = random.Random(7)
    docs = corpus(rng, 60)
    index = fresh(docs, method)
    for _ in range(40):
        drop = set(rng.sample(range(len(docs)), rng.randint(0, min(5, len(docs)))))
        kept = [d for i, d in enumerate(docs) if i not in drop]
        new = corpus(rng, rng.randint(0, 6))
        # The new documents go anywhere among the kept ones, which keep their order.
        slots = sorted(rng.randint(0, len(kept)) for _ in new)
        merged: list[list[str]] = []
        positions: list[int] = []
        old_to_new = np.full(len(docs), -1, dtype=np.int64)
        old_kept = [i for i in range(len(docs)) if i not in drop]
        k = 0
        for slot in range(len(kept) + 1):
            while k < len(new) and slots[k] == slot:
                positions.append(len(merged))
                merged.append(new[k])
                k += 1
            if slot < len(kept):
                old_to_new[old_kept[slot]] = len(merged)
                merged.append(kept[slot])
        base = Postings(index.vocab, index.indptr, index.indices, index.tf)  # type: ignore[arg-type]
        postings = merge(base, old_to_new, positions, [Counter(d) for d in new])
        lengths = np.asarray([len(d) for d in merged], dtype=np.int64)
        index = weigh(postings, lengths, method=method, k1=1.2, b=0.75)
        docs = merged
        if any(docs):
            assert_same(index, build_keyword_index(docs, method=method, k1=1.2, b=0.75))
        query = [rng.choice(WORDS) for _ in range(4)]
        scores = bm25_row(index, query)[0]
        if any(docs):
            expected = bm25_row(build_keyword_index(docs, method=method, k1=1.2, b=0.75), query)[0]
            assert scores.tobytes() == expected.tobytes()


def test_terms_no_document_holds_are_pruned_once_they_are_most_of_the_vocabulary() -> None:
    docs = [[f"only{i}", "shared"] for i in range(100)]
    index = fresh(docs, "lucene")
    base = Postings(index.vocab, index.indptr, index.indices, index.tf)  # type: ignore[arg-type]
    old_to_new = np.full(100, -1, dtype=np.int64)
    old_to_new[:10] = np.arange(10)
    postings = merge(base, old_to_new, [], [])
    assert set(postings.vocab) == {f"only{i}" for i in range(10)} | {"shared"}
    assert postings.of("shared").tolist() == list(range(10))
