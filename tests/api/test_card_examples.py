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


def test_examples_vote_as_their_float32_rows_and_no_whole_vector_is_held(
    client: TestClient,
) -> None:
    """The votes are built from float16 whole vectors: float32's to float16's rounding, and
    lift the same card; between builds the cache holds no whole vector, only the votes."""
    texts = [EXAMPLE, "rain in Oslo today", "wind in Bergen"]
    tool = card("weather_a", texts)
    assert client.post("/v1/tools", json=tool, headers=ADMIN).status_code == 201
    cache, services = settled(client), services_of(client)
    snapshot = services.index.get("default")
    assert snapshot is not None
    exact = card_examples(snapshot.index, ["weather_a"] * 3, make_encoder("fake").encode(texts))
    kept = cache.get("default")
    assert exact is not None and kept is not None
    np.testing.assert_allclose(kept.vectors, exact.vectors, rtol=0, atol=2e-3)
    held = [a for a in arrays_in(vars(cache), skip=cache._built) if a.size]
    assert held == [], [a.shape for a in held]


def arrays_in(root: object, skip: object) -> list[np.ndarray]:
    """The numpy arrays reachable from ``root`` through dicts, lists and tuples (not
    through ``skip``)."""
    found, stack, seen = [], [root], set()
    while stack:
        obj = stack.pop()
        if obj is skip or id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            found.append(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple):
            stack.extend(obj)
    return found


def test_a_rebuild_reads_only_new_texts_and_equals_a_first_build(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another card written: its texts alone are read; unchanged texts keep their rows, and
    the votes are those a first build on the same basis makes of every text."""
    first = card("weather_a", [EXAMPLE, "rain in Oslo today"])
    assert client.post("/v1/tools", json=first, headers=ADMIN).status_code == 201
    cache = settled(client)
    before = cache.get("default")
    assert before is not None
    read: list[list[str]] = []
    real = examples_module.text_vectors

    def spy(session: object, encoder: object, texts: list[str], *args: object) -> np.ndarray:
        read.append(list(texts))
        return real(session, encoder, texts, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(examples_module, "text_vectors", spy)
    second = card("weather_b", ["wind in Bergen", EXAMPLE])
    assert client.post("/v1/tools", json=second, headers=ADMIN).status_code == 201
    cache = settled(client)
    after = cache.get("default")
    assert after is not None and read == [["wind in Bergen"]]
    snapshot = services_of(client).index.get("default")
    assert snapshot is not None
    pairs = cache._pairs["default"]
    vectors = make_encoder("fake").encode([t for _, t in pairs]).astype(np.float16)
    fresh = card_examples(snapshot.index, [n for n, _ in pairs], vectors, before.basis)
    assert fresh is not None and after.tools == fresh.tools
    assert np.array_equal(after.offsets, fresh.offsets) and after.basis is before.basis
    np.testing.assert_allclose(after.vectors, fresh.vectors, rtol=0, atol=1e-6)


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
