"""The batching encoder: same rows as the inner encoder, fewer model calls under concurrency."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

from app.embedding.batching import BatchingEncoder
from app.embedding.encoders import make_encoder


class GatedEncoder:
    """Wraps the fake encoder; its first call blocks until released, and calls are recorded."""

    def __init__(self) -> None:
        self.inner = make_encoder("fake")
        self.name, self.dim = self.inner.name, self.inner.dim
        self.calls: list[int] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        if len(self.calls) == 1:
            self.entered.set()
            assert self.release.wait(10)
        if any(t == "boom" for t in texts):
            raise RuntimeError("model failed")
        return self.inner.encode(texts)


def test_alone_it_is_the_inner_encoder() -> None:
    inner = make_encoder("fake")
    batching = BatchingEncoder(inner)
    for text in ["a b", "c", ""]:
        assert np.array_equal(batching.encode([text]), inner.encode([text]))
    assert np.array_equal(batching.encode(["a", "b"]), inner.encode(["a", "b"]))


def test_concurrent_calls_share_one_model_call() -> None:
    gated = GatedEncoder()
    batching = BatchingEncoder(gated)
    texts = [f"query number {i}" for i in range(9)]
    results: dict[int, np.ndarray] = {}

    def call(i: int) -> None:
        results[i] = batching.encode([texts[i]])[0]

    first = threading.Thread(target=call, args=(0,))
    first.start()
    assert gated.entered.wait(10)  # the leader is inside the model
    others = [threading.Thread(target=call, args=(i,)) for i in range(1, 9)]
    for thread in others:
        thread.start()
    while len(batching._queue) < 8:  # all eight are queued behind the leader
        threading.Event().wait(0.001)
    gated.release.set()
    for thread in [first, *others]:
        thread.join(10)
    assert gated.calls == [1, 8]
    for i, text in enumerate(texts):
        assert np.array_equal(results[i], gated.inner.encode([text])[0])


def test_a_failure_reaches_its_caller_and_the_encoder_recovers() -> None:
    gated = GatedEncoder()
    gated.release.set()
    batching = BatchingEncoder(gated)
    with pytest.raises(RuntimeError, match="model failed"):
        batching.encode(["boom"])
    assert batching.encode(["fine"]).shape == (1, gated.dim)


class ThreadRecorder(GatedEncoder):
    """Also records the thread count asked for before each call."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[int] = []
        self.batches: list[list[str]] = []

    def set_threads(self, threads: int) -> None:
        self.threads.append(threads)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        return super().encode(texts)


def test_route_texts_go_before_a_running_import_and_bulk_runs_in_chunks() -> None:
    recorder = ThreadRecorder()
    batching = BatchingEncoder(recorder, bulk_batch=4, query_threads=1, bulk_threads=2)
    cards = [f"card text {'x' * (12 - i)} {i}" for i in range(12)]  # sorted by length in chunks
    rows: dict[str, np.ndarray] = {}

    importer = threading.Thread(target=lambda: rows.update(bulk=batching.encode(cards)))
    importer.start()
    assert recorder.entered.wait(10)  # the first bulk chunk is inside the model
    router = threading.Thread(target=lambda: rows.update(route=batching.encode(["a step"])))
    router.start()
    while not batching._queue:  # the route is queued behind the running chunk
        threading.Event().wait(0.001)
    recorder.release.set()
    importer.join(10)
    router.join(10)

    assert [len(b) for b in recorder.batches] == [4, 1, 4, 4]  # the route jumps the import
    assert recorder.batches[1] == ["a step"]
    assert recorder.threads == [2, 1, 2, 2]
    first = recorder.batches[0]
    assert [len(t) for t in first] == sorted(len(t) for t in first)
    # rows come back in the caller's order, whatever order the chunks ran in
    assert np.array_equal(rows["bulk"], recorder.inner.encode(cards))
    assert np.array_equal(rows["route"], recorder.inner.encode(["a step"]))


def test_without_thread_settings_the_encoder_is_left_alone() -> None:
    recorder = ThreadRecorder()
    recorder.release.set()
    BatchingEncoder(recorder).encode([f"t{i}" for i in range(20)])
    assert recorder.threads == []


class BulkGatedEncoder:
    """A fake that may run calls at once, whose bulk chunks (cards) block until released."""

    concurrent = True

    def __init__(self) -> None:
        self.inner = make_encoder("fake")
        self.name, self.dim = self.inner.name, self.inner.dim
        self.bulk_running = 0
        self.release = threading.Event()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if texts and texts[0].startswith("card"):
            self.bulk_running += 1
            assert self.release.wait(10)
        return self.inner.encode(texts)


def test_a_route_finds_a_model_slot_while_an_import_embeds() -> None:
    gated = BulkGatedEncoder()
    batching = BatchingEncoder(gated, parallel=2)
    imports = [
        threading.Thread(target=batching.encode, args=([f"card {i} {j}" for j in range(64)],))
        for i in range(2)
    ]
    route = threading.Thread(target=batching.encode, args=(["where is my parcel"],))
    try:
        for thread in imports:
            thread.start()
        while gated.bulk_running < 1:
            threading.Event().wait(0.001)
        threading.Event().wait(0.2)  # time for a second chunk to take the other slot, if it may
        route.start()
        route.join(5)
        assert not route.is_alive(), "the route waited for a bulk chunk"
    finally:
        gated.release.set()
        for thread in [*imports, route]:
            if thread.ident is not None:
                thread.join(10)


def test_bulk_chunks_use_every_slot_but_one_and_all_finish() -> None:
    gated = BulkGatedEncoder()
    batching = BatchingEncoder(gated, parallel=3, bulk_batch=8)
    cards = [f"card {j}" for j in range(40)]
    rows: list[np.ndarray] = []
    imports = [
        threading.Thread(target=lambda: rows.append(batching.encode(cards))) for _ in range(3)
    ]
    for thread in imports:
        thread.start()
    while gated.bulk_running < 2:  # two chunks of three slots run at once ...
        threading.Event().wait(0.001)
    threading.Event().wait(0.2)
    assert gated.bulk_running == 2  # ... and no third
    gated.release.set()
    for thread in imports:
        thread.join(10)
    assert len(rows) == 3
    assert all(np.array_equal(r, gated.inner.encode(cards)) for r in rows)
