"""The confidence (app/routing/confidence.py): its math, the shipped model, a route's evidence."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from app.embedding.encoders import FakeEncoder
from app.routing import RouterConfig, RouterIndex, ToolDoc, embedding_text, query_texts, route
from app.routing.bm25 import bm25_scores
from app.routing.confidence import (
    CEILING,
    FEATURES,
    FLOOR,
    MONOTONE,
    ConfidenceModel,
    Evidence,
    sigmoid,
)
from app.routing.confidence_fit import CONFIDENCE_MODEL, RECOMMENDED_MIN_CONFIDENCE
from app.routing.index import doc_tokens
from app.routing.text import analyse

EVIDENCE = Evidence(
    cosine=0.5,
    ask_cosine=0.6,
    bm25=3.0,
    coverage=0.5,
    fused=2.0,
    lead=0.5,
    gap=0.5,
    tools=100,
    asks=1,
    penalty=0.0,
)
SMALL = ConfidenceModel(
    features=("cosine", "log_bm25", "log_tools"),
    mean=(0.4, 1.0, 4.0),
    scale=(0.1, 0.5, 2.0),
    weights=(1.5, 0.5, -0.25),
    intercept=-0.2,
    encoder="test",
)


def test_a_hand_computed_confidence() -> None:
    # logit = -0.2 + 1.5·(0.5−0.4)/0.1 + 0.5·(ln 4 − 1)/0.5 − 0.25·(ln 100 − 4)/2
    logit = -0.2 + 1.5 * 1.0 + 0.5 * (1.3862944 - 1.0) / 0.5 - 0.25 * (4.6051702 - 4.0) / 2.0
    assert SMALL.logit(EVIDENCE) == pytest.approx(logit, abs=1e-6)  # 1.6106
    assert SMALL.confidence(EVIDENCE) == round(1 / (1 + math.exp(-logit)), 3) == 0.834


@pytest.mark.parametrize("cosine", [-1.0, 0.0, 0.3, 1.0, 50.0, -50.0])
def test_always_within_the_floor_and_the_ceiling(cosine: float) -> None:
    value = SMALL.confidence(dataclasses.replace(EVIDENCE, cosine=cosine))
    assert FLOOR <= value <= CEILING
    assert value == round(value, 3)


def test_sigmoid_does_not_overflow() -> None:
    assert sigmoid(1000.0) == 1.0
    assert sigmoid(-1000.0) == 0.0
    assert sigmoid(0.0) == 0.5


def test_a_model_names_known_features_one_value_each() -> None:
    with pytest.raises(ValueError, match="unknown confidence features"):
        ConfidenceModel(("cosine", "vibes"), (0, 0), (1, 1), (1, 1), 0.0, "x")
    with pytest.raises(ValueError, match="one entry each"):
        ConfidenceModel(("cosine",), (0, 0), (1,), (1,), 0.0, "x")
    with pytest.raises(ValueError, match="positive"):
        ConfidenceModel(("cosine",), (0,), (0,), (1,), 0.0, "x")


def test_the_shipped_model_never_lowers_confidence_for_more_evidence() -> None:
    model = CONFIDENCE_MODEL
    for name, weight in zip(model.features, model.weights, strict=True):
        if name in MONOTONE:
            assert weight >= 0, name
    more = {
        "cosine": 0.1,
        "ask_cosine": 0.1,
        "bm25": 2.0,
        "coverage": 0.2,
        "fused": 0.5,
        "lead": 0.5,
        "gap": 0.5,
        "penalty": 0.1,
    }
    for field, step in more.items():
        for base in (EVIDENCE, dataclasses.replace(EVIDENCE, cosine=0.1, fused=0.5, lead=-1)):
            bigger = dataclasses.replace(base, **{field: getattr(base, field) + step})
            assert model.logit(bigger) >= model.logit(base), field
    assert 0 < RECOMMENDED_MIN_CONFIDENCE < 1
    assert set(model.features) <= set(FEATURES)


def test_more_evidence_raises_a_positive_weight_strictly() -> None:
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
    return route(INDEX, query, ENCODER.encode(query_texts(query)), config=CONFIG, **options)  # type: ignore[arg-type]


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
        assert c.evidence.ask_cosine == c.evidence.cosine  # one ask
        assert c.evidence.bm25 == pytest.approx(float(bm25[i]), rel=1e-5)
        assert c.evidence.tools == len(DOCS) and c.evidence.asks == 1
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
    assert all(0 < c.confidence < 1 for c in answer)


def test_min_confidence_leaves_out_the_candidates_below_it() -> None:
    query = "convert 20 euros to dollars"
    every = _ask(query, k=4)
    assert _ask(query, k=4, min_confidence=0.0) == every
    assert _ask(query, k=4, min_confidence=1.0) == []
    cut = every[1].confidence
    assert _ask(query, k=4, min_confidence=cut) == [c for c in every if c.confidence >= cut]


def test_leaving_tools_out_is_building_without_them() -> None:
    corpus = [doc_tokens(d, CONFIG.fields) for d in DOCS]
    gone = {"track_shipment", "book_table"}
    smaller = INDEX.without(gone, corpus)
    kept = [i for i, d in enumerate(DOCS) if d.name not in gone]
    rebuilt = RouterIndex.build([DOCS[i] for i in kept], VECTORS[kept], CONFIG)
    assert smaller.names == rebuilt.names
    for query in ("where is my parcel", "book a table for two", "weather in Oslo"):
        vec = ENCODER.encode(query_texts(query))
        assert route(smaller, query, vec, k=4, config=CONFIG) == route(
            rebuilt, query, vec, k=4, config=CONFIG
        )
    with pytest.raises(ValueError, match="corpus"):
        INDEX.without(gone, corpus[:2])
