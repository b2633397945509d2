"""Query memory: the steps remembered from reports (what the reranker trains and reads its
report features from) and the votes the cards' examples cast (pure parts)."""

from __future__ import annotations

import tracemalloc
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from app.loop.memory import KEY_STEPS, remembered_steps, step_hash, substance_since
from app.loop.repository import ForgetMark, MemoryReport
from app.routing.memory import (
    QueryMemory,
    agreement,
    memory_votes,
    principal_basis,
    segment_rows,
)

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def report(
    tool: str, text: str, *, key: str | None = "a", days: float = 0.0, n: int = 0
) -> MemoryReport:
    return MemoryReport("ns", tool, text, key, f"r{n}", NOW - timedelta(days=days))


def test_agreement_rises_from_the_floor_and_votes_take_each_tools_best_step() -> None:
    assert agreement(np.array([0.1, 0.3, 0.65, 1.0]), 0.3).tolist() == pytest.approx(
        [0.0, 0.0, 0.5, 1.0]
    )
    rows, begins = segment_rows(np.array([5, 0]), np.array([1, 2]))
    assert rows.tolist() == [5, 0, 1] and begins.tolist() == [0, 1]
    vectors = np.eye(3, dtype=np.float32)
    memory = QueryMemory.build(["a", "a", "b"], vectors, np.array([1.0, 0.5, 1.0]))
    assert memory is not None
    votes = memory_votes(memory, ["b", "a", "zzz"], np.array([0.0, 1.0, 0.0], np.float32), 0.0)
    assert votes.tolist() == [0.0, 0.5, 0.0]  # a's second step (weight 0.5) matches


def test_a_flood_of_identical_reports_counts_as_one() -> None:
    flood = [report("weather_local", "Weather  in PARIS", n=i) for i in range(1000)]
    steps = remembered_steps(flood, NOW, 14.0, lambda tool: True)
    assert len(steps) == 1 and steps[0].weight == 1.0 and steps[0].reports == 1000
    one = remembered_steps(flood[:1], NOW, 14.0, lambda tool: True)
    assert one[0].weight == steps[0].weight  # the flood moves nothing more than one report


def test_one_key_holds_a_bounded_number_of_steps_per_tool() -> None:
    many = [report("send_email", f"mail number {i}", key="flooder", n=i) for i in range(200)]
    others = [report("send_email", f"letter {i}", key=f"k{i}", n=500 + i) for i in range(5)]
    steps = remembered_steps(many + others, NOW, 14.0, lambda tool: True)
    assert len(steps) == KEY_STEPS + 5


def test_decay_deleted_tools_hashed_steps_and_forgets() -> None:
    old = remembered_steps([report("send_email", "mail Ann", days=14.0)], NOW, 14.0, bool)
    assert old[0].weight == pytest.approx(0.5)  # one half-life
    gone = remembered_steps([report("deleted_tool", "mail Ann")], NOW, 14.0, lambda t: False)
    assert gone == []
    hashed = remembered_steps([report("send_email", "sha256:" + "0" * 64)], NOW, 14.0, bool)
    assert hashed == []
    reports = [report("send_email", "mail Ann", n=1), report("send_email", "write Bob", n=2)]
    one = ForgetMark("ns", "send_email", step_hash("MAIL ann"), NOW)
    kept = remembered_steps(reports, NOW, 14.0, bool, [one])
    assert [s.text for s in kept] == ["write Bob"]
    whole = ForgetMark("ns", "send_email", None, NOW)
    assert remembered_steps(reports, NOW, 14.0, bool, [whole]) == []
    later = report("send_email", "mail Ann", n=3, days=-1.0)  # reported after the mark
    assert [s.text for s in remembered_steps([later], NOW, 14.0, bool, [whole])] == ["mail Ann"]


def test_memory_holds_since_the_cards_current_substance_began() -> None:
    def params(*names: str, required: tuple[str, ...] = ()) -> dict[str, object]:
        return {"type": "object", "properties": {n: {} for n in names}, "required": list(required)}

    day = [NOW - timedelta(days=d) for d in (10, 8, 6, 4)]
    reworded = [(day[0], params("to", required=("to",))), (day[1], params("to", required=("to",)))]
    assert substance_since(reworded) is None  # a reworded card is the same tool
    changed = [*reworded, (day[2], params("to", "cc", required=("to",)))]
    assert substance_since(changed) == day[2]  # a new parameter: a new tool from then on
    required = [*changed, (day[3], params("to", "cc", required=("to", "cc")))]
    assert substance_since(required) == day[3]
    back = [*changed, (day[3], params("to", required=("to",)))]
    assert substance_since(back) == day[3]  # back to an older substance still starts anew

    reports = [report("send_email", "mail Ann", days=5, n=1), report("send_email", "mail Bob", n=2)]
    since = {"send_email": NOW - timedelta(days=4)}
    kept = remembered_steps(reports, NOW, 14.0, bool, since=since)
    assert [s.text for s in kept] == ["mail Bob"]


def whole_build(tools: list[str], vectors: np.ndarray, dims: int) -> QueryMemory:
    """The build as it was before chunks: every row gathered, made unit and projected at
    once (the reference the chunked build must equal)."""
    order = np.argsort(np.unique(np.asarray(tools), return_inverse=True)[1], kind="stable")
    rows = np.asarray(vectors, dtype=np.float32)[order]
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), np.float32(1e-30))
    basis = principal_basis(rows, dims)
    kept = rows if basis is None else rows @ basis.T
    ones = np.ones(len(tools), np.float32)
    return QueryMemory(tuple(sorted(set(tools))), np.zeros(0), kept, ones, {}, basis)


@pytest.mark.parametrize("dims", [0, 16])
def test_the_chunked_build_equals_the_whole_build(dims: int) -> None:
    """Several chunks (10,000 rows; 4,096 a chunk), rows of a matrix or a list of rows, on
    some columns: the same basis bit for bit, the same rows (bit for bit unprojected;
    projected, to float32's rounding: a product's blocking differs by chunk)."""
    rng = np.random.default_rng(dims)
    vectors = rng.standard_normal((10_000, 40)).astype(np.float32)
    tools = [f"t{i}" for i in rng.integers(0, 700, len(vectors))]
    ones = np.ones(len(tools), np.float32)
    whole = whole_build(tools, vectors[:, 8:], dims)
    for given in (vectors, list(vectors)):
        built = QueryMemory.build(tools, given, ones, dims, columns=slice(8, None))
        assert built is not None and built.tools == whole.tools
        if dims:
            assert built.basis is not None and np.array_equal(built.basis, whole.basis)
            np.testing.assert_allclose(built.vectors, whole.vectors, rtol=0, atol=2e-6)
        else:
            assert built.basis is None and np.array_equal(built.vectors, whole.vectors)


def test_the_build_holds_at_most_a_chunk_besides_what_it_keeps() -> None:
    """40,000 float16 rows: the build's peak is what it keeps plus a chunk, not the
    whole-size float32 copies it made before (one of the input, one gathered)."""
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((40_000, 64)).astype(np.float16)
    tools = [f"t{i % 5_000}" for i in range(len(vectors))]
    ones = np.ones(len(tools), np.float32)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        built = QueryMemory.build(tools, vectors, ones)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert built is not None
    whole = vectors.size * 4  # one float32 copy of every row
    assert peak < built.nbytes + whole // 2, (peak, built.nbytes, whole)


def test_kept_rows_are_grouped_anew_not_transformed() -> None:
    """``kept=True``: an earlier build's rows (unit, projected), given in any order, come
    back grouped by tool as they were, on the basis given."""
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((300, 24)).astype(np.float32)
    tools = [f"t{i}" for i in rng.integers(0, 40, len(vectors))]
    ones = np.ones(len(tools), np.float32)
    built = QueryMemory.build(tools, vectors, ones, 8)
    assert built is not None and built.basis is not None
    order = np.argsort(np.unique(np.asarray(tools), return_inverse=True)[1], kind="stable")
    shuffled = rng.permutation(len(tools))
    rows = np.empty_like(built.vectors)
    rows[order] = built.vectors  # each input row's kept row
    again = QueryMemory.build(
        [tools[i] for i in shuffled], list(rows[shuffled]), ones, basis=built.basis, kept=True
    )
    assert again is not None and again.tools == built.tools and again.basis is built.basis
    assert np.array_equal(again.offsets, built.offsets)
    for name, i in built.positions.items():  # within a tool, rows may come in another order
        a, b = built.offsets[i], built.offsets[i + 1]
        mine = again.vectors[again.offsets[again.positions[name]] : again.offsets[i + 1]]
        assert sorted(map(tuple, mine)) == sorted(map(tuple, built.vectors[a:b]))
