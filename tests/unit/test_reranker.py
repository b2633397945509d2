"""The reranker (app/routing/reranker.py) without a server: its trees read as scikit-learn
reads them, report features that never see a step's own report, the gate, bounded
influence over what it may move and read, and its stored form."""

from __future__ import annotations

import dataclasses
import io
import itertools

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier

from app.learning import training
from app.learning.training import (
    Binned,
    Trees,
    batch_cosines,
    bin_edges,
    cold_answers,
    fit_binned,
    fit_flat,
    flat,
)
from app.routing import NamespaceView, RouteOptions, Router, RouterConfig, RouterIndex, ToolDoc
from app.routing.reranker import (
    COLD_FEATURES,
    FEATURES,
    STORED_BEFORE,
    Bank,
    Forest,
    Learned,
    Reranker,
    features,
)
from app.routing.signals import gemv_rows
from app.routing.text import stems


def stump(feature: int, threshold: float, below: float, above: float) -> Forest:
    """One tree of one split: ``below`` when ``x[feature] <= threshold``, else ``above``."""
    return Forest(
        np.array([[feature, 0, 0]]),
        np.array([[threshold, 0.0, 0.0]]),
        np.array([[1, 0, 0]]),
        np.array([[2, 0, 0]]),
        np.array([[0.0, below, above]]),
        np.array([[False, True, True]]),
        0.0,
        2,
    )


def test_the_flattened_trees_read_as_scikit_learn_reads_them() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2000, 6))
    y = (x[:, 0] + x[:, 1] * x[:, 2] + rng.normal(scale=0.3, size=2000) > 0).astype(int)
    model = HistGradientBoostingClassifier(max_iter=40, max_leaf_nodes=15, random_state=0)
    model.fit(x, y)
    forest = fit_flat(model)
    test = rng.normal(size=(300, 6))
    assert forest.probability(test) == pytest.approx(model.predict_proba(test)[:, 1], abs=1e-9)
    assert flat([], 0.0).probability(test) == pytest.approx(np.full(300, 0.5))
    # all splits at once (QuickScorer's masks): each tree's leaf as a walk down that tree
    # alone finds it (NaN going right), the values summed in the trees' order, bit for bit
    test[::7, 1] = np.nan
    leaves = []
    for row in test:
        found = []
        for t in range(forest.feature.shape[0]):
            node = 0
            while not forest.leaf[t, node]:
                goes_left = row[forest.feature[t, node]] <= forest.threshold[t, node]
                node = forest.left[t, node] if goes_left else forest.right[t, node]
            found.append(forest.value[t, node])
        leaves.append(found)
    walked = forest.baseline + np.ascontiguousarray(np.array(leaves).T).sum(axis=0)
    assert forest.log_odds(test).tobytes() == walked.tobytes()
    assert (forest.baseline + forest._walked(test).sum(axis=0)).tobytes() == walked.tobytes()


def test_trees_fitted_on_bins_read_the_features_values_as_on_the_bins() -> None:
    """Binned before scikit-learn sees them (its weighted binning sorts a feature once per
    edge), the trees split on the features' values where the bins part."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3000, 4))
    x[:, 3] = rng.integers(0, 7, 3000)  # few distinct values: cut between them
    y = (x[:, 0] + x[:, 1] * x[:, 3] + rng.normal(scale=0.5, size=3000) > 0).astype(float)
    weight = np.where(np.arange(3000) % 3 == 0, 0.5, 1.0)
    binned = Binned.of(x, weight)
    assert bin_edges(x[:, 3], weight).tolist() == [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]
    assert int(binned.codes[:, 0].max()) == 254  # at most 255 bins
    binary = Trees(objective="binary")
    forest = fit_binned(binned, y, weight, binary)
    model = HistGradientBoostingClassifier(
        max_iter=binary.iterations,
        learning_rate=binary.learning_rate,
        max_leaf_nodes=binary.leaves,
        min_samples_leaf=binary.min_leaf,
        l2_regularization=binary.l2,
        early_stopping=False,
        random_state=binary.seed,
    ).fit(binned.codes, y, sample_weight=weight)
    expected = model.predict_proba(binned.codes)[:, 1]
    assert forest.probability(x) == pytest.approx(expected, abs=1e-9)


def test_a_lightgbm_rankers_trees_read_as_lightgbm_reads_them() -> None:
    """Lambdarank trees (``Booster.dump_model()``) read into a ``Forest`` score rows as
    LightGBM does, and their probability is a softmax over one step's candidates."""
    rng = np.random.default_rng(7)
    steps, depth = 300, 20
    x = rng.normal(size=(steps * depth, 6))
    x[:, 5] = rng.integers(0, 4, steps * depth)  # few distinct values
    y = np.zeros(steps * depth)
    for s in range(steps):
        rows = slice(s * depth, (s + 1) * depth)
        y[s * depth + int(np.argmax(x[rows, 0] + x[rows, 5] + rng.normal(size=depth)))] = 1
    starts = np.arange(0, steps * depth + 1, depth)
    weight = np.repeat(np.where(np.arange(steps) % 4 == 0, 1 / 3, 1.0), depth)
    trees = Trees(objective="lambdarank", leaves=31, iterations=30)  # the bench's option
    forest = training.fit_forest(x, y, weight, trees, starts)
    assert forest.link == "softmax"
    model = training.lambdarank_model(trees)
    model.fit(x, y, group=np.diff(starts), sample_weight=weight)
    test = rng.normal(size=(500, 6))
    test[:, 5] = rng.integers(-1, 5, 500)
    test[:50, 5] = np.repeat(np.arange(5), 10) + 0.5  # on and between the cuts
    raw = model.booster_.predict(test, raw_score=True)
    assert forest.log_odds(test) == pytest.approx(raw, abs=1e-9)
    assert (forest.baseline + forest._walked(test).sum(axis=0)) == pytest.approx(raw, abs=1e-9)
    one = forest.probability(test[:depth])
    expected = np.exp(raw[:depth] - raw[:depth].max())
    assert one == pytest.approx(expected / expected.sum(), abs=1e-12)
    assert one.sum() == pytest.approx(1.0)
    both = forest.probabilities(test[: 2 * depth], np.array([0, depth, 2 * depth]))
    assert both[:depth] == pytest.approx(one, abs=1e-15)
    assert both[depth:] == pytest.approx(forest.probability(test[depth : 2 * depth]), abs=1e-15)
    back = Forest.of_arrays(forest.arrays())
    assert back.link == "softmax"
    assert back.probability(test[:depth]).tobytes() == one.tobytes()


WEATHER = "Current weather in a city: temperature and rain."
DOCS = [
    ToolDoc("weather_now", WEATHER, WEATHER),
    ToolDoc("weather_town", WEATHER, WEATHER),
    ToolDoc("send_email", "Send an email.", "Send an email to someone."),
]
DIM = 4


def index() -> RouterIndex:
    vectors = np.array([[1, 0, 0, 0], [1, 0.01, 0, 0], [0, 0, 1, 0]], dtype=np.float32)
    return RouterIndex.build(DOCS, vectors, RouterConfig())


STEP = np.array([[1.0, 0.2, 0.0, 0.0]], dtype=np.float32)
TEXT = "current weather in Oslo"


def cold() -> list[str]:
    return [c.name for c in Router(RouterConfig()).route(NamespaceView(index()), TEXT, STEP)]


def test_training_routes_its_steps_as_a_route_does() -> None:
    texts = [TEXT, "send an email to Ann", "rain tomorrow?", "weather"]
    vectors = np.array(
        [[1, 0.2, 0, 0], [0, 0.1, 1, 0], [0.9, 0, 0.1, 0.2], [0, 0, 0, 0]], dtype=np.float32
    )
    router, view = Router(RouterConfig()), NamespaceView(index())
    found = cold_answers(router, view, texts, vectors, [0, 1, 2, 3], 3)
    for i, text in enumerate(texts):
        alone = router.cold(view, text, vectors[i], RouteOptions(k=3))
        assert found[i] == alone  # the same numbers, not only the same order


def test_cosines_a_block_at_a_time_are_a_route_s_own(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    matrix = rng.normal(size=(1000, 96)).astype(np.float32)
    units = rng.normal(size=(7, 96)).astype(np.float32)
    monkeypatch.setattr(training, "COSINE_BLOCK_BYTES", 96 * 4 * 64)  # 64 tools a block
    assert np.array_equal(batch_cosines(matrix, units), gemv_rows(matrix, units))


def bank_for(tool: str, other: str | None = None) -> Bank:
    """Two reports of ``tool`` with the step's own words and direction (and one of
    ``other``, unlike the step)."""
    rows = [[1.0, 0.2, 0.0, 0.0], [1.0, 0.25, 0.0, 0.0]]
    texts = ["current weather in Oslo", "the weather in Oslo now"]
    tools = [tool, tool]
    if other is not None:
        rows, texts, tools = [*rows, [0.0, 0.0, 0.0, 1.0]], [*texts, "forecast"], [*tools, other]
    return Bank.build(np.array(rows, dtype=np.float32), tools, [1.0] * len(tools), texts)


def by_report_max(delta: float = 0.1) -> Forest:
    """A model that believes a candidate with a close report (report_max above 0.9)."""
    return stump(FEATURES.index("report_max"), 0.9, -4.0, 4.0)


def test_report_features_never_see_the_steps_own_report() -> None:
    second = cold()[1]
    answer = Router(RouterConfig()).route(NamespaceView(index()), TEXT, STEP, RouteOptions(k=3))
    bank = bank_for(second)
    unit = STEP[0] / np.linalg.norm(STEP[0])
    seen = features(answer, unit, stems(TEXT), bank, None)
    alone = features(answer, unit, stems(TEXT), bank, None, left_out=np.array([0]))
    at = [c.name for c in answer].index(second)
    count, words = FEATURES.index("report_count"), FEATURES.index("words")
    assert seen[at, count] == pytest.approx(np.log1p(2)) and alone[at, count] == np.log1p(1)
    assert seen[at, words] == 1.0 and alone[at, words] < 1.0  # "current" was its own only
    assert not features(answer, unit, stems(TEXT), bank, frozenset())[:, len(COLD_FEATURES) :].any()


def two_tools_for_one_text() -> tuple[str, str, list[str], np.ndarray, Bank]:
    """The cold first two tools, each reported for ``TEXT`` (one step that needed both),
    the second also for a text like it, and ``send_email`` for one unlike it: the tools,
    the reported texts, their vectors and the bank."""
    first, second = cold()[:2]
    texts = [TEXT, TEXT, "the weather in Oslo now", "send an email to Ann"]
    tools = [first, second, second, "send_email"]
    vectors = np.array(
        [[1, 0.2, 0, 0], [1, 0.2, 0, 0], [1, 0.25, 0, 0], [0, 0.1, 1, 0]], dtype=np.float32
    )
    return first, second, texts, vectors, Bank.build(vectors, tools, [1.0] * 4, texts)


def test_two_tools_reported_for_one_text_are_one_group_both_right_neither_seen() -> None:
    """An agent that called two tools for a step reported both: the text is one group whose
    two tools are both right (neither the other's negative), and its features read neither
    report of the text (a sibling's report of the very same words would make its tool look
    certain), only the tools' other reports."""
    first, second, texts, vectors, bank = two_tools_for_one_text()
    rows = training.training_rows(index(), RouterConfig(), bank, vectors, depth=3)
    assert rows.steps == 3  # a group a text, of 4 steps
    oslo = slice(int(rows.starts[0]), int(rows.starts[1]))
    names = [
        c.name
        for c in cold_answers(
            Router(RouterConfig()), NamespaceView(index()), texts, vectors, [0], 3
        )[0]
    ]
    assert rows.y[oslo].tolist() == [float(n in (first, second)) for n in names]
    x = rows.x[oslo]
    count, near = FEATURES.index("report_count"), FEATURES.index("report_max")
    at_first, at_second = names.index(first), names.index(second)
    assert x[at_first, count] == 0.0  # its one report is this text's: left out
    assert x[at_second, count] == pytest.approx(np.log1p(1))  # only "the weather in Oslo now"
    assert x[at_second, near] < 0.9999  # never the text's own vector


def test_a_text_of_two_tools_votes_whole_for_each_where_the_nearest_reports_split() -> None:
    """``text_vote``: each of the nearest reported texts votes its cosine for every tool it
    reported, so a step like a text that needed two tools reads both as its tools (the
    reports' ``nearest_vote`` gives each half); only the ``NEAREST`` nearest texts vote, and
    a text left out votes for none."""
    first, second, _, vectors, bank = two_tools_for_one_text()
    answer = Router(RouterConfig()).route(NamespaceView(index()), TEXT, STEP, RouteOptions(k=3))
    names = [c.name for c in answer]
    unit = STEP[0] / np.linalg.norm(STEP[0])
    x = features(answer, unit, stems(TEXT), bank, None)
    vote, nearest = FEATURES.index("text_vote"), FEATURES.index("nearest_vote")
    sims = bank.vectors @ unit
    total = sims[0] + sims[2] + max(sims[3], 0.0)  # three texts; TEXT's two rows vote once
    at_first, at_second = names.index(first), names.index(second)
    assert x[at_first, vote] == pytest.approx(sims[0] / total)
    assert x[at_second, vote] == pytest.approx((sims[0] + sims[2]) / total)
    assert x[at_first, nearest] < x[at_first, vote] - 0.15  # the reports' vote split TEXT
    assert x[:, vote].sum() > 1.0  # a text votes for each of its tools
    alone = features(answer, unit, stems(TEXT), bank, None, left_out=np.array([0, 1]))
    assert alone[at_first, vote] == 0.0  # its one report is the text left out
    assert alone[at_second, vote] == pytest.approx(sims[2] / (sims[2] + max(sims[3], 0.0)))
    many = [f"weather note {i}" for i in range(8)]
    crowd = Bank.build(np.tile(vectors[2], (8, 1)), [second] * 8, [1.0] * 8, many)
    lone = Bank.build(
        np.vstack([np.tile(vectors[2], (8, 1)), vectors[:1]]),
        [second] * 8 + [first],
        [1.0] * 9,
        [*many, "a step nearly like it"],
    )
    assert features(answer, unit, stems(TEXT), crowd, None)[at_second, vote] == 1.0
    beyond = features(answer, unit, stems(TEXT), lone, None)
    assert beyond[at_first, vote] > 0  # the nearest text of all votes
    assert beyond[at_second, vote] == pytest.approx(4 * sims[2] / (sims[0] + 4 * sims[2]))


def test_the_model_moves_only_past_its_gate_and_only_a_tool_the_key_may_move() -> None:
    first, second = cold()[:2]
    view = NamespaceView(index())
    for delta, moves, expected in [
        (0.1, None, second),  # confirmed for all: it moves
        (0.999, None, first),  # not past its gate
        (0.1, frozenset(), first),  # nobody's to move: its reports are not even read
    ]:
        ranker = Reranker(by_report_max(), bank_for(second, first), delta)
        learned = Learned(ranker, confirmed=moves, own={"a": frozenset({second})})
        served = view.__class__(view.index, learned=learned)
        answer = Router(RouterConfig()).route(served, TEXT, STEP, RouteOptions(k=3))
        assert answer[0].name == expected
        assert ("learned" in answer[0].stages) is (moves is None)  # else: the cold answer
        assert all(b.confidence <= a.confidence for a, b in itertools.pairwise(answer))
        own = Router(RouterConfig()).route(served, TEXT, STEP, RouteOptions(k=3, key="a"))
        assert own[0].name == (first if delta > 0.9 or moves == frozenset() else second)
    # A cold first without reports (it may be the right tool nobody reported) stays first.
    unreported = Learned(Reranker(by_report_max(), bank_for(second), 0.1))
    answer = Router(RouterConfig()).route(
        NamespaceView(index(), learned=unreported), TEXT, STEP, RouteOptions(k=3)
    )
    assert answer[0].name == first
    # … and its answer is the cold one, confidences included: the model cannot move it, and
    # its probability of a tool whose reports it cannot read is not what it learned
    plain = Router(RouterConfig()).route(view, TEXT, STEP, RouteOptions(k=3))
    assert answer == plain


def test_a_route_reads_no_prior_and_no_memory_but_through_a_model() -> None:
    """The usage prior and query memory can no longer move a route by themselves: a route
    reads the index, the cards' examples and the model the guard promoted, nothing else,
    and no weight of the router applies them."""
    assert [f.name for f in dataclasses.fields(NamespaceView)] == ["index", "examples", "learned"]
    weights = {f.name for f in dataclasses.fields(RouterConfig)}
    assert not weights & {"prior_weight", "prior_cap", "memory_weight", "memory_floor"}
    plain = Router(RouterConfig()).route(NamespaceView(index()), TEXT, STEP, RouteOptions(k=3))
    for key in ("", "a"):
        again = Router(RouterConfig()).route(
            NamespaceView(index()), TEXT, STEP, RouteOptions(k=3, key=key)
        )
        assert again == plain and all(c.stages["prior"] == 0.0 for c in again)


def test_a_stored_reranker_reads_back_the_same() -> None:
    bank = bank_for("weather_town")
    ranker = Reranker(by_report_max(), bank, 0.25, 12)
    back = Reranker.from_bytes(ranker.to_bytes(), lambda texts: bank.vectors[: len(texts)])
    assert (back.delta, back.depth, back.bank.texts, back.bank.tools) == (
        0.25,
        12,
        bank.texts,
        bank.tools,
    )
    assert back.digest() == ranker.digest()
    rows = np.random.default_rng(0).normal(size=(5, len(FEATURES)))
    assert back.forest.probability(rows) == pytest.approx(ranker.forest.probability(rows))
    with pytest.raises(ValueError, match="not a reranker"):
        Reranker.from_bytes(np.eye(DIM, dtype="<f4").tobytes(), lambda texts: bank.vectors)


def test_a_stored_reranker_of_other_features_is_never_read_wrongly() -> None:
    """A model stored before its features' names were kept reads its columns where they
    were; one trained on features this code does not know (other names, or a column past
    those it names) is refused: read as today's columns it would be read wrongly."""
    bank = bank_for("weather_town")
    vectors = lambda texts: bank.vectors[: len(texts)]  # noqa: E731
    stored = dict(np.load(io.BytesIO(Reranker(by_report_max(), bank, 0.25).to_bytes())))
    assert tuple(stored.pop("features").tolist()) == FEATURES
    before = io.BytesIO()
    np.savez(before, **stored)
    assert Reranker.from_bytes(before.getvalue(), vectors).forest.feature.max() < len(STORED_BEFORE)
    for names, feature in [(("score", "something_else"), 0), (STORED_BEFORE[:5], 5)]:
        other = io.BytesIO()
        trees = stored | {"features": np.array(names, dtype=str)}
        trees["feature"] = np.full_like(stored["feature"], feature)
        np.savez(other, **trees)
        with pytest.raises(ValueError, match="other features"):
            Reranker.from_bytes(other.getvalue(), vectors)
