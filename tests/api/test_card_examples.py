"""Card examples through the service: embedded in the background after a write (cached by
text hash in the embeddings table), shown in stages, gone with the card or its examples.

Real Postgres and SQLite, the real HTTP surface (TestClient); the fake encoder."""

from __future__ import annotations

import time

import numpy as np
import pytest
from fastapi.testclient import TestClient

import app.tools.examples as examples_module
from app.db import unit_of_work
from app.embedding.encoders import make_encoder
from app.routing.examples import card_examples
from app.tools.examples import ExampleCache, text_vectors
from tests.api.loop_support import services_of
from tests.conftest import ADMIN, AGENT

SAME = "Current weather in a city, right now: temperature, wind and rain."
EXAMPLE = "is it raining in Paris at the moment"


def card(name: str, examples: list[str]) -> dict[str, object]:
    return {"name": name, "summary": SAME, "description": SAME, "examples": examples}


def examples_of(client: TestClient) -> ExampleCache:
    cache = services_of(client).examples
    assert cache is not None
    return cache


def settled(client: TestClient) -> ExampleCache:
    """The cache once the background thread has caught up with the index (generous bound)."""
    cache, index = examples_of(client), services_of(client).index
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        snapshot = index.get("default")
        built = cache._built.get("default")
        if snapshot is None or (built is not None and built[0] is snapshot):
            return cache
        time.sleep(0.02)
    raise AssertionError("card examples were not built within 30 s")


def route(client: TestClient, query: str) -> list[dict]:  # type: ignore[type-arg]
    body = {"query": query, "k": 2}
    response = client.post("/v1/route", json=body, headers=AGENT)
    assert response.status_code == 200, response.text
    candidates: list[dict] = response.json()["candidates"]  # type: ignore[type-arg]
    return candidates


def test_an_example_lifts_its_card_once_written_and_stops_when_removed(
    client: TestClient,
) -> None:
    for tool in (card("weather_a", []), card("weather_b", [])):
        assert client.post("/v1/tools", json=tool, headers=ADMIN).status_code == 201
    settled(client)
    plain = route(client, EXAMPLE)
    assert all("examples" not in c["stages"] for c in plain)  # no card has examples yet
    underdog = plain[1]["name"]  # the twins tie: an example should decide

    put = client.put(f"/v1/tools/{underdog}", json=card(underdog, [EXAMPLE]), headers=ADMIN)
    assert put.status_code == 200, put.text
    settled(client)
    lifted = route(client, EXAMPLE)
    assert lifted[0]["name"] == underdog and lifted[0]["stages"]["examples"] > 0

    again = client.put(f"/v1/tools/{underdog}", json=card(underdog, []), headers=ADMIN)
    assert again.status_code == 200, again.text
    settled(client)
    assert all("examples" not in c["stages"] for c in route(client, EXAMPLE))


def test_an_example_is_embedded_once(client: TestClient) -> None:
    """A restart (a new cache on the same database) finds the vectors stored."""
    tool = card("weather_a", [EXAMPLE, "rain in Oslo today"])
    assert client.post("/v1/tools", json=tool, headers=ADMIN).status_code == 201
    settled(client)
    services = services_of(client)
    counted = CountingEncoder()
    fresh = ExampleCache(services.index, services.session_factory, counted)  # type: ignore[arg-type]
    assert fresh.refresh() == 1 and counted.texts == 0
    assert fresh.get("default") is not None and len(fresh.get("default") or ()) == 2


class CountingEncoder:
    """The fake encoder, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        self.inner = make_encoder("fake")
        self.name, self.dim, self.texts = self.inner.name, self.inner.dim, 0

    def encode(self, texts: list[str]) -> object:
        self.texts += len(texts)
        return self.inner.encode(texts)


def test_examples_are_kept_in_float16_and_vote_as_their_float32_rows(
    client: TestClient,
) -> None:
    """The whole vectors held between builds are float16 (half of float32's bytes); the
    votes built from them are float32's to float16's rounding, and lift the same card."""
    texts = [EXAMPLE, "rain in Oslo today", "wind in Bergen"]
    tool = card("weather_a", texts)
    assert client.post("/v1/tools", json=tool, headers=ADMIN).status_code == 201
    cache, services = settled(client), services_of(client)
    assert {row.dtype for row in cache._vectors.values()} == {np.dtype(np.float16)}
    snapshot = services.index.get("default")
    assert snapshot is not None
    exact = card_examples(snapshot.index, ["weather_a"] * 3, make_encoder("fake").encode(texts))
    kept = cache.get("default")
    assert exact is not None and kept is not None
    np.testing.assert_allclose(kept.vectors, exact.vectors, rtol=0, atol=2e-3)


def test_stored_vectors_are_read_a_chunk_at_a_time(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read 2 hashes at a time, with a repeated text and texts not stored yet, the vectors
    are those read at once; each text embedded once."""
    texts = ["alpha one", "beta two", "alpha one", "gamma three", "delta four"]
    services = services_of(client)
    counted = CountingEncoder()
    with unit_of_work(services.session_factory) as session:
        text_vectors(session, counted, texts[:2])  # stored before
    with unit_of_work(services.session_factory) as session:
        monkeypatch.setattr(examples_module, "READ_CHUNK", 2)
        chunked = text_vectors(session, counted, texts, np.float16)
    assert counted.texts == 2 + 2  # "gamma three", "delta four" added
    want = make_encoder("fake").encode(texts)
    assert chunked.dtype == np.float16
    np.testing.assert_array_equal(chunked, want.astype(np.float16))
