"""Bulk card embedding: two chunks in flight for a concurrent encoder, every vector stored."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest

from app.db import unit_of_work
from app.embedding.encoders import FakeEncoder, make_encoder
from app.routing import embedding_text
from app.services import build_services
from app.tools.catalog import EMBED_BATCH, card_to_doc, text_hash, write_cards
from registry import repository
from registry.card import ToolCard
from tests.conftest import make_settings


class SlowConcurrentEncoder:
    """The fake encoder, declared safe for concurrent calls, counting calls in flight."""

    concurrent = True

    def __init__(self, fail_on: str | None = None) -> None:
        self.inner = FakeEncoder()
        self.name, self.dim = self.inner.name, self.inner.dim
        self.in_flight = 0
        self.most_in_flight = 0
        self.fail_on = fail_on
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(0.02)  # long enough for the other chunk to start
            if self.fail_on is not None and any(self.fail_on in t for t in texts):
                raise RuntimeError("model failed")
            return self.inner.encode(texts)
        finally:
            with self._lock:
                self.in_flight -= 1


def cards(n: int) -> list[ToolCard]:
    return [ToolCard(name=f"bulk_{i}", description=f"Bulk tool {i} for testing.") for i in range(n)]


def test_chunks_run_at_once_but_leave_routes_a_slot_and_every_vector_is_stored(
    database_url: str,
) -> None:
    encoder = SlowConcurrentEncoder()
    services = build_services(make_settings(database_url, encoder_parallel_batches=3), encoder)
    batch = cards(EMBED_BATCH * 4 + 7)
    with unit_of_work(services.session_factory) as session:
        write_cards(session, services.encoder, batch)
    with unit_of_work(services.session_factory) as session:
        texts = [embedding_text(card_to_doc(c)) for c in batch]
        stored = repository.get_embeddings(session, encoder.name, map(text_hash, texts))
    services.close()
    assert encoder.most_in_flight == 2  # of three slots: one is left to routes
    assert len(stored) == len(batch)
    for text in texts:  # each text's own vector, whatever chunk or thread embedded it
        row = np.frombuffer(stored[text_hash(text)], dtype=np.float32)
        np.testing.assert_array_equal(row, make_encoder("fake").encode([text])[0])


def test_a_failed_chunk_fails_the_write_and_stores_nothing(database_url: str) -> None:
    encoder = SlowConcurrentEncoder(fail_on="Bulk tool 130 ")
    services = build_services(make_settings(database_url, encoder_parallel_batches=2), encoder)
    with (
        pytest.raises(RuntimeError, match="model failed"),
        unit_of_work(services.session_factory) as session,
    ):
        write_cards(session, services.encoder, cards(EMBED_BATCH * 4))
    with unit_of_work(services.session_factory) as session:
        assert repository.count_tools(session) == 0
        hashes = [text_hash(embedding_text(card_to_doc(c))) for c in cards(EMBED_BATCH * 4)]
        assert repository.get_embeddings(session, encoder.name, hashes) == {}
    services.close()


def items(n: int, bad: set[int] = frozenset()) -> list[dict[str, object]]:  # type: ignore[assignment]
    return [
        {"name": f"bulk_{i}", "description": "" if i in bad else f"Bulk tool {i} for testing."}
        for i in range(n)
    ]


def test_an_import_embeds_the_first_cards_while_the_rest_are_parsed(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.tools.catalog as catalog

    parsed = 0
    parse_card = catalog.parse_card

    def counting(item, namespace=None):  # type: ignore[no-untyped-def]
        nonlocal parsed
        parsed += 1
        return parse_card(item, namespace)

    monkeypatch.setattr(catalog, "parse_card", counting)
    parsed_at_first_call: list[int] = []

    class Recording(SlowConcurrentEncoder):
        def encode(self, texts: Sequence[str]) -> np.ndarray:
            if not parsed_at_first_call:
                parsed_at_first_call.append(parsed)
            time.sleep(0.05)  # the parse of the next chunk overtakes the model
            return super().encode(texts)

    encoder = Recording()
    services = build_services(make_settings(database_url, encoder_parallel_batches=2), encoder)
    n = EMBED_BATCH * 4
    with unit_of_work(services.session_factory) as session:
        batch, statuses = catalog.import_items(session, services.encoder, items(n), None)
    with unit_of_work(services.session_factory) as session:
        hashes = [text_hash(embedding_text(card_to_doc(c))) for c in batch.cards]
        stored = repository.get_embeddings(session, encoder.name, hashes)
        assert repository.count_tools(session) == n
    services.close()
    assert statuses == ["created"] * n
    assert len(stored) == n
    assert parsed_at_first_call and parsed_at_first_call[0] < n  # the model started early


def test_an_import_with_a_bad_item_writes_nothing_and_stops_the_model(database_url: str) -> None:
    import app.tools.catalog as catalog

    encoder = SlowConcurrentEncoder()
    calls: list[int] = []
    encode = encoder.encode
    encoder.encode = lambda texts: calls.append(len(texts)) or encode(texts)  # type: ignore[method-assign]
    services = build_services(make_settings(database_url, encoder_parallel_batches=2), encoder)
    n = EMBED_BATCH * 6
    with unit_of_work(services.session_factory) as session:
        batch, statuses = catalog.import_items(
            session, services.encoder, items(n, bad={EMBED_BATCH + 3}), None
        )
    with unit_of_work(services.session_factory) as session:
        assert repository.count_tools(session) == 0
        hashes = [text_hash(embedding_text(card_to_doc(c))) for c in batch.cards]
        assert repository.get_embeddings(session, encoder.name, hashes) == {}
    services.close()
    assert statuses is None
    assert [r["index"] for r in batch.rejects] == [EMBED_BATCH + 3]
    assert sum(calls) <= EMBED_BATCH  # only what was parsed before the bad item
