"""BM25 engine: hand-computed Lucene scores and a cross-check against rank_bm25.

rank_bm25 has no Lucene variant, so the cross-checks use the variants both libraries share:

* ``robertson`` vs ``BM25Okapi``: same idf ``ln((N - df + 0.5) / (df + 0.5))``; bm25s leaves
  out the constant ``(k1 + 1)`` factor of the tf part, so scores differ by exactly that factor.
  The toy corpus keeps every query term's df below N/2, where Okapi's negative-idf floor
  (``epsilon · mean idf``) and bm25s's clamp at 0 would disagree.
* ``bm25+`` vs ``BM25Plus`` (Lv & Zhai 2011): identical formulas, idf ``ln((N+1)/df)`` and
  delta = 0.5, including the ``delta · idf`` a document gets for a query term it lacks.
  (rank_bm25's ``BM25L`` multiplies by the raw tf once more, so it is no reference.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from rank_bm25 import BM25Okapi, BM25Plus

from app.routing.bm25 import bm25_row, bm25_scores, build_keyword_index, matched_in

CORPUS = [
    ["weather", "forecast", "city", "rain"],
    ["flight", "book", "ticket", "airport", "city"],
    ["hotel", "book", "room", "night"],
    ["stock", "price", "market", "ticker", "price"],
    ["translate", "text", "language"],
    ["currency", "exchange", "rate", "market"],
    ["rain", "umbrella", "shop"],
    ["news", "headline", "market", "today"],
]
QUERIES = [["book", "city", "flight"], ["price", "price", "market"], ["rain", "forecast"]]
K1, B = 1.5, 0.75


@pytest.mark.parametrize("query", QUERIES)
def test_robertson_matches_bm25okapi_up_to_k1_plus_one(query: list[str]) -> None:
    ours = bm25_scores(build_keyword_index(CORPUS, method="robertson", k1=K1, b=B), query)
    theirs = BM25Okapi(CORPUS, k1=K1, b=B).get_scores(query)
    np.testing.assert_allclose(ours * (K1 + 1), theirs, rtol=1e-5)


@pytest.mark.parametrize("query", QUERIES)
def test_bm25_plus_matches_rank_bm25(query: list[str]) -> None:
    ours = bm25_scores(build_keyword_index(CORPUS, method="bm25+", k1=K1, b=B), query)
    theirs = BM25Plus(CORPUS, k1=K1, b=B, delta=0.5).get_scores(query)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_lucene_score_by_hand() -> None:
    corpus = [["a", "b"], ["a", "a", "c"], ["c"]]
    index = build_keyword_index(corpus, method="lucene", k1=1.2, b=0.75)
    avg = 2.0
    idf_a = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    expected_doc1 = idf_a * 2 / (2 + 1.2 * (1 - 0.75 + 0.75 * 3 / avg))
    expected_doc0 = idf_a * 1 / (1 + 1.2 * (1 - 0.75 + 0.75 * 2 / avg))
    scores = bm25_scores(index, ["a"])
    np.testing.assert_allclose(scores, [expected_doc0, expected_doc1, 0.0], rtol=1e-5)


def test_unknown_terms_and_empty_queries_score_zero() -> None:
    index = build_keyword_index(CORPUS)
    assert not bm25_scores(index, ["zebra"]).any()
    assert not bm25_scores(index, []).any()
    assert bm25_scores(index, []).shape == (len(CORPUS),)


def test_empty_corpus_has_no_vocabulary() -> None:
    index = build_keyword_index([[], []])
    assert index.n_docs == 2
    assert not bm25_scores(index, ["a"]).any()


def test_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown BM25 method"):
        build_keyword_index(CORPUS, method="bm42")


def test_terms_matched_counts_distinct_query_terms_per_document() -> None:
    index = build_keyword_index(CORPUS)
    touched = bm25_row(index, ["book", "city", "city", "zebra"])[1]
    counts = matched_in(touched, np.arange(index.n_docs))
    assert counts.tolist() == [1, 2, 1, 0, 0, 0, 0, 0]
    assert [int(matched_in(touched, np.array([d]))[0]) for d in range(8)] == counts.tolist()
