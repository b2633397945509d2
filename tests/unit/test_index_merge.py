"""An index kept current by merges is the index a full build makes of the same cards: after
random sequences of creates, updates and deletes, every array is equal and every route answers
the same (the deterministic fake encoder; app/routing/index.py, ``RouterIndex.merge``)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from app.embedding.encoders import FakeEncoder
from app.routing import (
    NamespaceView,
    RouteOptions,
    Router,
    RouterConfig,
    RouterIndex,
    ToolDoc,
    embedding_text,
    query_texts,
)
from app.routing.index import IndexSegment

ENCODER = FakeEncoder(dim=32)
CONFIG = RouterConfig()
WORDS = [
    "weather",
    "city",
    "forecast",
    "order",
    "invoice",
    "refund",
    "email",
    "send",
    "calendar",
    "meeting",
    "flight",
    "hotel",
    "book",
    "cancel",
    "search",
    "file",
    "upload",
    "report",
    "ticket",
    "user",
    "account",
    "payment",
    "stock",
    "price",
    "news",
    "天气",
    "订单",
    "邮件",
]
QUERIES = [
    "send an email to the team",
    "book a flight and a hotel",
    "what is the weather forecast in Paris",
    "cancel my order and refund the payment",
    "upload the report file",
    "",
    "zzz unknown words only",
    "查询 天气 和 订单",
]


def random_doc(rng: random.Random, name: str) -> ToolDoc:
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, 12))]
    params = {w: {"type": "string", "description": f"the {w}"} for w in rng.sample(WORDS, 2)}
    required = [w for w in params if rng.random() < 0.5]
    return ToolDoc(
        name=name,
        summary=rng.choice(["", " ".join(words[:3])]),
        description=" ".join(words),
        tags=tuple(rng.sample(["a", "B", "c"], rng.randint(0, 2))),
        parameters={"type": "object", "properties": params, "required": required},
        examples=tuple(rng.sample(WORDS, rng.randint(0, 2))),
        pinned=rng.random() < 0.1,
    )


def vectors(docs: list[ToolDoc]) -> np.ndarray:
    if not docs:
        return np.zeros((0, ENCODER.dim), dtype=np.float32)
    return ENCODER.encode([embedding_text(d) for d in docs])


MULTILINGUAL = (16, 32)  # as if the fake encoder's second half read every language


def built(live: dict[str, ToolDoc]) -> RouterIndex:
    docs = [live[name] for name in sorted(live)]
    return RouterIndex.build(docs, vectors(docs), CONFIG, multilingual=MULTILINGUAL)


def answers(index: RouterIndex) -> list[object]:
    out: list[object] = []
    for query in QUERIES:
        vec = ENCODER.encode(query_texts(query)) if query else None
        for k, tags in ((3, None), (8, ["a"]), (1, ["b", "C"])):
            found = Router(CONFIG).route(
                NamespaceView(index), query, vec, RouteOptions(k=k, tags=tags)
            )
            out.append([(c.name, c.score, c.stages, c.missing_required) for c in found])
    return out


def assert_same_index(merged: RouterIndex, fresh: RouterIndex) -> None:
    assert merged.names == fresh.names
    assert merged.positions == fresh.positions
    assert merged.embeddings.tobytes() == fresh.embeddings.tobytes()
    assert merged.embeddings.shape == fresh.embeddings.shape
    assert merged.rules == fresh.rules
    assert merged.cjk_share.tobytes() == fresh.cjk_share.tobytes()
    assert merged.multilingual == fresh.multilingual
    np.testing.assert_array_equal(merged.pinned, fresh.pinned)
    assert merged.keyword.n_docs == fresh.keyword.n_docs
    for term, j in fresh.keyword.vocab.items():
        i = merged.keyword.vocab[term]
        ours = slice(merged.keyword.indptr[i], merged.keyword.indptr[i + 1])
        theirs = slice(fresh.keyword.indptr[j], fresh.keyword.indptr[j + 1])
        np.testing.assert_array_equal(merged.keyword.indices[ours], fresh.keyword.indices[theirs])
        assert merged.keyword.data[ours].tobytes() == fresh.keyword.data[theirs].tobytes()
    for tag in ("a", "b", "c"):
        np.testing.assert_array_equal(merged.tags.of(tag), fresh.tags.of(tag))


@pytest.mark.parametrize("seed", range(12))
def test_random_creates_updates_and_deletes_answer_as_a_full_rebuild(seed: int) -> None:
    rng = random.Random(seed)
    live: dict[str, ToolDoc] = {}
    index = built(live)
    serial = 0
    for _ in range(25):
        dropped: set[str] = set()
        added: dict[str, ToolDoc] = {}
        for _ in range(rng.choice([1, 1, 1, 2, 5, 12])):  # one change, or a batch of them
            kind = rng.choice(["create", "create", "update", "delete"]) if live else "create"
            if kind == "create":
                serial += 1
                name = rng.choice(["tool", "Tool", "z", "a.b", "m-n"]) + f"_{serial}"
                added[name] = random_doc(rng, name)
            else:
                name = rng.choice(sorted(live))
                dropped.add(name)
                added.pop(name, None)
                if kind == "update":
                    added[name] = random_doc(rng, name)
        live = {n: d for n, d in live.items() if n not in dropped} | added
        docs = list(added.values())
        index = index.merge(dropped, IndexSegment.analyse(docs, vectors(docs), CONFIG.fields))
        fresh = built(live)
        assert_same_index(index, fresh)
        assert answers(index) == answers(fresh)


def test_a_merge_refuses_an_index_out_of_name_order_and_a_tool_it_keeps() -> None:
    rng = random.Random(1)
    docs = [random_doc(rng, "b"), random_doc(rng, "a")]
    unordered = RouterIndex.build(docs, vectors(docs), CONFIG)
    segment = IndexSegment.analyse([], vectors([]), CONFIG.fields)
    with pytest.raises(ValueError, match="name order"):
        unordered.merge(set(), segment)
    ordered = built({"a": docs[1], "b": docs[0]})
    again = IndexSegment.analyse([docs[1]], vectors([docs[1]]), CONFIG.fields)
    with pytest.raises(ValueError, match="dropped"):
        ordered.merge(set(), again)
    assert ordered.merge({"a"}, again).names == ("a", "b")


def test_unit_rows_in_chunks_equal_the_whole_computation() -> None:
    """Checked and normalised 4,096 rows at a time: the same rows as at once (row-wise
    norms), rows already unit passed through without a copy, a NaN anywhere refused."""
    from app.routing.segments import unit_rows

    rng = np.random.default_rng(9)
    raw = rng.standard_normal((10_000, 12)).astype(np.float32)
    norms = np.linalg.norm(raw, axis=1)
    want = raw / norms[:, None]
    assert np.array_equal(unit_rows(raw, len(raw)), want)
    unit = np.ascontiguousarray(want)
    assert unit_rows(unit, len(unit)) is unit
    unit[9_999, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        unit_rows(unit, len(unit))


def test_a_first_load_keeps_a_read_only_matrix_as_it_is() -> None:
    """All new, in order, read-only (what the live index reads): the index keeps that
    matrix, not a copy; a writable one (a caller's) is copied as before."""
    from app.routing.segments import MergePlan

    rows = np.eye(4, dtype=np.float32)
    plan = MergePlan.appended(4)
    assert plan.rows(np.zeros((0, 4), np.float32), rows) is not rows
    rows.flags.writeable = False
    assert plan.rows(np.zeros((0, 4), np.float32), rows) is rows
    kept = MergePlan(np.array([0]), np.array([1, 2, 3, 4]), 5)  # an old row kept: laid out
    laid = kept.rows(np.ones((1, 4), np.float32), rows)
    assert laid is not rows and np.array_equal(laid[1:], rows)
