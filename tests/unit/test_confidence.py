"""The confidence (app/routing/confidence.py): its math, the shipped model, a route's evidence."""

from __future__ import annotations

import dataclasses

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
from app.routing.bm25 import bm25_scores
from app.routing.confidence import (
    CEILING,
    FEATURES,
    FLOOR,
    MONOTONE,
    ConfidenceModel,
    Evidence,
    Logistic,
    Shape,
    feature_columns,
    pieces,
    sigmoid,
)
from app.routing.confidence_fit import CONFIDENCE_MODEL, RECOMMENDED_MIN_CONFIDENCE
from app.routing.text import analyse

EVIDENCE = Evidence(
    cosine=0.5,
    part_cosine=0.6,
    bm25=3.0,
    coverage=0.5,
    fused=2.0,
    lead=0.5,
    gap=0.5,
    tools=100,
    part_count=1,
    penalty=0.0,
)
COSINE = Shape("cosine", 0.0, 1.0, (0.5,), (2.0, 4.0))
SMALL = ConfidenceModel(
    leader=Logistic(-1.0, (COSINE, Shape("log_tools", 2.0, 9.0, (), (-0.5,)))),
    others=Logistic(-3.0, (COSINE,)),
    encoder="test",
)


@pytest.mark.parametrize(("x", "value"), [(-1.0, 0.0), (0.25, 0.5), (0.75, 2.0), (1.5, 3.0)])
def test_a_shape_is_its_slopes_integrated_from_low(x: float, value: float) -> None:
    # slope 2 on [0, 0.5], 4 on [0.5, 1]; clipped outside [0, 1]
    assert COSINE(x) == pytest.approx(value)
    columns = pieces([x], 0.0, 1.0, (0.5,))[0]
    assert sum(s * p for s, p in zip(COSINE.slopes, columns, strict=True)) == pytest.approx(value)


def test_a_hand_computed_confidence() -> None:
    # leader (lead ≥ 0): −1 + cosine part 2·0.5 − 0.5·(ln 100 − 2) = −1.302585
    assert SMALL.logit(EVIDENCE) == pytest.approx(-1.0 + 1.0 - 0.5 * (4.6051702 - 2.0))
    assert SMALL.confidence(EVIDENCE) == 0.214  # σ(−1.302585) = 0.21378
    # another candidate (lead < 0): −3 + 1 = −2, σ(−2) = 0.1192
    assert SMALL.confidence(dataclasses.replace(EVIDENCE, lead=-0.1)) == 0.119


@pytest.mark.parametrize("cosine", [-1.0, 0.0, 0.3, 1.0, 50.0, -50.0])
def test_always_within_the_floor_and_the_ceiling(cosine: float) -> None:
    steep = ConfidenceModel(
        Logistic(0.0, (Shape("cosine", -2.0, 2.0, (), (100.0,)),)), Logistic(0.0, ()), "x"
    )
    value = steep.confidence(dataclasses.replace(EVIDENCE, cosine=cosine))
    assert FLOOR <= value <= CEILING
    assert value == round(value, 3)


def test_sigmoid_does_not_overflow() -> None:
    assert sigmoid(1000.0) == 1.0
    assert sigmoid(-1000.0) == 0.0
    assert sigmoid(0.0) == 0.5


def test_a_shape_names_a_known_feature_and_fits_its_pieces() -> None:
    with pytest.raises(ValueError, match="unknown confidence feature"):
        Shape("vibes", 0.0, 1.0, (), (1.0,))
    with pytest.raises(ValueError, match="increasing"):
        Shape("cosine", 0.0, 1.0, (1.5,), (1.0, 1.0))
    with pytest.raises(ValueError, match="one slope per piece"):
        Shape("cosine", 0.0, 1.0, (0.5,), (1.0,))


# More evidence, as a route could show it: a field moved with those that move with it (the
# candidate's own fused score raises its lead and gap; a weaker runner-up raises its lead).
SHARED = {
    "cosine": {"cosine": 0.05},
    "part_cosine": {"part_cosine": 0.05},
    "bm25": {"bm25": 1.0},
    "coverage": {"coverage": 0.05},
    "penalty": {"penalty": 0.025},
    "own fused score": {"fused": 0.4, "lead": 0.4, "gap": 0.4},
}
LEADER_ONLY = {"weaker runner-up": {"lead": 0.3, "gap": 0.3}}
OTHERS_ONLY = {"weaker leader": {"lead": 0.2}, "weaker next one": {"gap": 0.1}}


def _more(base: Evidence, bump: dict[str, float], times: int) -> Evidence:
    return dataclasses.replace(base, **{f: getattr(base, f) + d * times for f, d in bump.items()})


def test_the_shipped_model_never_lowers_confidence_for_more_evidence() -> None:
    model = CONFIDENCE_MODEL
    for role in (model.leader, model.others):
        for shape in role.shapes:
            if shape.feature in MONOTONE:
                assert min(shape.slopes) >= 0, shape
            assert shape.feature in FEATURES
    leader = dataclasses.replace(EVIDENCE, cosine=0.1, part_cosine=0.1, bm25=0.0, coverage=0.0)
    other = dataclasses.replace(leader, fused=0.5, lead=-3.0, gap=0.0, penalty=-0.3)
    for base, bumps in ((leader, {**SHARED, **LEADER_ONLY}), (other, {**SHARED, **OTHERS_ONLY})):
        for name, bump in bumps.items():
            previous = model.logit(base)
            for times in range(1, 40):  # across every knot
                bigger = _more(base, bump, times)
                if (bigger.lead >= 0) != (base.lead >= 0) or bigger.penalty > 0:
                    break  # another role, or beyond what a route can show
                assert model.logit(bigger) >= previous - 1e-12, (name, times)
                previous = model.logit(bigger)
    assert 0 < RECOMMENDED_MIN_CONFIDENCE < 1


def test_the_inlined_logit_is_the_sum_of_the_shapes() -> None:
    rng = np.random.default_rng(3)
    for _ in range(300):
        evidence = Evidence(
            cosine=float(rng.uniform(-0.2, 1.0)),
            part_cosine=float(rng.uniform(-0.2, 1.0)),
            bm25=float(rng.uniform(0, 60)),
            coverage=float(rng.uniform(0, 1)),
            fused=float(rng.uniform(-2, 25)),
            lead=float(rng.uniform(-10, 10)),
            gap=float(rng.uniform(0, 10)),
            tools=int(rng.integers(1, 200_000)),
            part_count=int(rng.integers(1, 9)),
            penalty=-0.1 * int(rng.integers(0, 4)),
        )
        for role in (CONFIDENCE_MODEL.leader, CONFIDENCE_MODEL.others):
            by_shape = role.intercept + sum(s(FEATURES[s.feature](evidence)) for s in role.shapes)
            assert role.logit(evidence) == pytest.approx(by_shape, abs=1e-9)


def test_more_evidence_raises_a_rising_shape_strictly() -> None:
    higher = dataclasses.replace(EVIDENCE, cosine=0.7)
    assert SMALL.confidence(higher) > SMALL.confidence(EVIDENCE)
    bigger_namespace = dataclasses.replace(EVIDENCE, tools=10_000)
    assert SMALL.confidence(bigger_namespace) < SMALL.confidence(EVIDENCE)


# --- the evidence a route hands the model -------------------------------------------------

ENCODER = FakeEncoder(dim=64)
CONFIG = RouterConfig()
DOCS = tuple(
    ToolDoc(name=name, summary="", description=text)
    for name, text in (
        ("track_shipment", "Where a parcel is now, by its tracking number."),
        ("draft_email", "Write an email draft to a contact."),
        ("get_weather", "Current weather for a city."),
        ("convert_currency", "Convert an amount of money between currencies."),
        ("book_table", "Reserve a table at a restaurant."),
        ("translate_text", "Translate text between languages."),
    )
)
VECTORS = ENCODER.encode([embedding_text(d) for d in DOCS])
INDEX = RouterIndex.build(DOCS, VECTORS, CONFIG)


def _ask(query: str, **options: object) -> list:
    return Router(CONFIG).route(
        NamespaceView(INDEX), query, ENCODER.encode(query_texts(query)), RouteOptions(**options)
    )  # type: ignore[arg-type]


def test_the_evidence_is_the_raw_cosine_bm25_and_fused_margins() -> None:
    query = "where is my parcel with tracking number 1Z999"
    answer = _ask(query, k=len(DOCS))
    unit = ENCODER.encode([query])[0]
    unit = unit / np.linalg.norm(unit)
    bm25 = bm25_scores(INDEX.keyword, analyse(query))
    fused = [c.evidence.fused for c in answer]
    for c in answer:
        i = INDEX.positions[c.name]
        assert c.evidence.cosine == pytest.approx(float(VECTORS[i] @ unit), abs=1e-5)
        assert c.evidence.part_cosine == c.evidence.cosine  # one ask
        assert c.evidence.bm25 == pytest.approx(float(bm25[i]), rel=1e-5)
        assert c.evidence.tools == len(DOCS) and c.evidence.part_count == 1
        # the relative parts are the fused z-score over the best one's
        relevance = c.stages["keyword"] + c.stages["embedding"]
        assert relevance * answer[0].evidence.fused == pytest.approx(c.evidence.fused, abs=1e-5)
    ordered = sorted(fused, reverse=True)
    top = answer[0].evidence
    assert top.lead == pytest.approx(ordered[0] - ordered[1], abs=1e-6)
    assert top.gap == pytest.approx(ordered[0] - ordered[1], abs=1e-6)
    assert answer[1].evidence.lead == pytest.approx(ordered[1] - ordered[0], abs=1e-6)
    assert answer[-1].evidence.gap == pytest.approx(ordered[-1], abs=1e-6)  # none below: 0
    matched = {"track_shipment": 3}  # parcel, track, number (stems) of 6 distinct terms
    distinct = len(set(analyse(query)))
    assert answer[0].name == "track_shipment"
    assert top.coverage == pytest.approx(matched["track_shipment"] / distinct)
    assert all(FLOOR <= c.confidence <= CEILING for c in answer)


def test_min_confidence_leaves_out_the_candidates_below_it() -> None:
    query = "convert 20 euros to dollars"
    every = _ask(query, k=4)
    assert _ask(query, k=4, min_confidence=0.0) == every
    assert _ask(query, k=4, min_confidence=1.0) == []
    cut = every[1].confidence
    assert _ask(query, k=4, min_confidence=cut) == [c for c in every if c.confidence >= cut]


def test_leaving_tools_out_is_building_without_them() -> None:
    gone = {"track_shipment", "book_table"}
    smaller = INDEX.without(gone)
    kept = [i for i, d in enumerate(DOCS) if d.name not in gone]
    rebuilt = RouterIndex.build([DOCS[i] for i in kept], VECTORS[kept], CONFIG)
    assert smaller.names == rebuilt.names
    for query in ("where is my parcel", "book a table for two", "weather in Oslo"):
        vec = ENCODER.encode(query_texts(query))
        assert Router(CONFIG).route(
            NamespaceView(smaller), query, vec, RouteOptions(k=4)
        ) == Router(CONFIG).route(NamespaceView(rebuilt), query, vec, RouteOptions(k=4))
    assert INDEX.without({"no_such_tool"}).names == INDEX.names


def test_confidences_as_arrays_are_the_scalar_logits_bit_for_bit() -> None:
    """``Logistic.logits`` (a route's 20 candidates at once) is ``logit``'s arithmetic in
    the same order: the same floats, edges, zeros and NaN included."""
    rng = np.random.default_rng(5)

    def value(low: float, high: float) -> float:
        pick = rng.random()
        if pick < 0.05:
            return float("nan")
        if pick < 0.15:
            return float(rng.choice([low, high, 0.0, -0.0]))
        return float(rng.uniform(low, high))

    for _ in range(300):
        evidence = [
            Evidence(
                value(-0.2, 1.0),
                value(-0.2, 1.0),
                value(0.0, 80.0),
                value(0.0, 1.0),
                value(-3.0, 25.0),
                value(-12.0, 12.0),
                value(0.0, 5.0),
                int(rng.choice([1, 10, 10_000])),
                int(rng.choice([1, 3])),
                value(-0.5, 0.0),
            )
            for _ in range(int(rng.integers(1, 25)))
        ]
        for model in (CONFIDENCE_MODEL.leader, CONFIDENCE_MODEL.others):
            scalar = np.array([model.logit(e) for e in evidence])
            assert scalar.tobytes() == model.logits(evidence).tobytes()
        assert CONFIDENCE_MODEL.confidences(evidence) == [
            CONFIDENCE_MODEL.confidence(e) for e in evidence
        ]
        columns = feature_columns(evidence)  # every feature, not only the shipped model's
        assert list(columns) == list(FEATURES)
        for name, read in FEATURES.items():
            one_by_one = np.array([read(e) for e in evidence], dtype=np.float64)
            assert one_by_one.tobytes() == columns[name].tobytes(), name
