"""The route-text embedding cache: bounded, hits counted, another text a miss, rows unchanged."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.embedding.batching import BatchingEncoder
from app.embedding.cache import EmbeddingCache
from app.embedding.encoders import make_encoder
from app.metrics import Metrics


class CountingEncoder:
    """The fake encoder, recording each call's texts."""

    def __init__(self) -> None:
        self.inner = make_encoder("fake")
        self.name, self.dim = self.inner.name, self.inner.dim
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.encode(texts)


def test_it_is_bounded_least_recent_out_first() -> None:
    cache = EmbeddingCache(2)
    for text in ("a", "b"):
        cache.put(text, np.ones(3))
    assert cache.get("a") is not None  # "a" is now the most recent
    cache.put("c", np.ones(3))
    assert len(cache) == 2
    assert cache.get("b") is None
    assert cache.get("a") is not None and cache.get("c") is not None


def test_rows_held_are_read_only_copies() -> None:
    cache, row = EmbeddingCache(4), np.ones(3, dtype=np.float32)
    cache.put("a", row)
    row[0] = 5.0
    held = cache.get("a")
    assert held is not None and held[0] == 1.0 and not held.flags.writeable


def test_size_zero_is_off() -> None:
    counting = CountingEncoder()
    batching = BatchingEncoder(counting, cache_size=0)
    for _ in range(2):
        batching.encode(["a step"], interactive=True)
    assert len(counting.calls) == 2 and batching.cache.hits == 0


def test_a_repeated_route_text_costs_no_model_call_and_the_same_row() -> None:
    counting = CountingEncoder()
    batching = BatchingEncoder(counting, cache_size=16)
    first = batching.encode(["book a flight", "to Paris"], interactive=True)
    again = batching.encode(["to Paris", "book a flight"], interactive=True)
    assert counting.calls == [["book a flight", "to Paris"]]
    assert np.array_equal(again, first[::-1])
    assert np.array_equal(first, counting.inner.encode(["book a flight", "to Paris"]))
    assert (batching.cache.hits, batching.cache.misses) == (2, 2)


def test_another_text_is_a_miss_embedded_alone() -> None:
    counting = CountingEncoder()
    batching = BatchingEncoder(counting, cache_size=16)
    batching.encode(["book a flight"], interactive=True)
    batching.encode(["book a flight", "book a hotel", "book a hotel"], interactive=True)
    assert counting.calls == [["book a flight"], ["book a hotel"]]  # once, though twice asked
    assert batching.cache.misses == 3 and batching.cache.hits == 1


def test_card_writes_do_not_enter_the_cache() -> None:
    counting = CountingEncoder()
    batching = BatchingEncoder(counting, cache_size=16)
    batching.encode(["a card's text"])
    batching.encode(["a card's text"], interactive=False)
    assert len(batching.cache) == 0 and len(counting.calls) == 2


def test_metrics_show_model_calls_and_the_cache() -> None:
    batching = BatchingEncoder(CountingEncoder(), cache_size=16)
    metrics = Metrics()
    metrics.watch_encoder(batching)
    batching.encode(["a", "b"], interactive=True)
    batching.encode(["a"], interactive=True)
    batching.encode([f"card {i}" for i in range(20)])
    text = metrics.render().decode()
    assert 'toolreach_model_calls_total{kind="route"} 1.0' in text
    assert 'toolreach_model_texts_total{kind="route"} 2.0' in text
    assert 'toolreach_model_texts_total{kind="bulk"} 20.0' in text
    assert "toolreach_embedding_cache_hits_total 1.0" in text
    assert "toolreach_embedding_cache_misses_total 2.0" in text
    assert "toolreach_embedding_cache_entries 2.0" in text
