"""``route`` end to end with the deterministic fake encoder: edge cases, fallback, ablations."""

from __future__ import annotations

import numpy as np
import pytest

from app.embedding.encoders import FakeEncoder
from app.routing import (
    ALL_STAGES,
    NamespaceView,
    RouteOptions,
    Router,
    RouterConfig,
    RouterIndex,
    ToolDoc,
    embedding_text,
)
from app.routing.parts import query_texts

ENCODER = FakeEncoder(dim=128)
CONFIG = RouterConfig()
TOOLS = (
    ToolDoc(
        name="get_weather",
        summary="Current weather for a city",
        description="Temperature, wind and rain right now in one city.",
        tags=("weather", "geo"),
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    ),
    ToolDoc(
        name="convertCurrency",
        summary="Convert an amount between currencies",
        description="Exchange rates for 150 currencies.",
        tags=("finance",),
        parameters={
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "from_currency": {"type": "string", "description": "ISO code, e.g. EUR"},
                "to_currency": {"type": "string", "description": "ISO code, e.g. USD"},
            },
            "required": ["amount", "from_currency", "to_currency"],
        },
    ),
    ToolDoc(
        name="translate.text",
        summary="Translate text",
        description="Translate text between languages.",
        tags=("language",),
    ),
    ToolDoc(
        name="search_web",
        summary="Search the web",
        description="General web search when no other tool fits.",
        pinned=True,
    ),
    ToolDoc(
        name="天气预报",
        summary="查询城市天气预报",
        description="未来七天的天气预报",
        tags=("weather",),
    ),
)


def build(docs: tuple[ToolDoc, ...] = TOOLS) -> RouterIndex:
    return RouterIndex.build(docs, ENCODER.encode([embedding_text(d) for d in docs]), CONFIG)


INDEX = build()


def ask(query: str, stages: frozenset[str] = ALL_STAGES, **options: object) -> list:
    vec = ENCODER.encode(query_texts(query))
    view = NamespaceView(INDEX)
    return Router(CONFIG, stages).route(view, query, vec, RouteOptions(**options))  # type: ignore[arg-type]


def test_stage_parts_add_up_to_the_score() -> None:
    for candidate in ask("convert 20 EUR to USD", k=5):
        # every stage, and the action vote: the step asks to convert (an update)
        assert set(candidate.stages) == {*ALL_STAGES, "action"}
        assert sum(candidate.stages.values()) == pytest.approx(candidate.score)


def test_best_tool_first_and_its_fused_score_is_one() -> None:
    best = ask("what is the weather in Paris right now")[0]
    assert best.name == "get_weather"
    assert best.stages["keyword"] + best.stages["embedding"] == pytest.approx(1.0)
    assert best.missing_required == ()


def test_missing_required_parameters_are_penalised_and_reported() -> None:
    top = {c.name: c for c in ask("convert currencies", k=5)}["convertCurrency"]
    assert top.missing_required == ("amount", "from_currency", "to_currency")
    assert top.stages["penalty"] == pytest.approx(-3 * CONFIG.missing_param_penalty)
    known = {"amount": 3, "from_currency": "EUR", "to_currency": "USD"}
    ok = {c.name: c for c in ask("convert currencies", k=5, context=known)}
    assert ok["convertCurrency"].missing_required == ()
    assert ok["convertCurrency"].stages["penalty"] == 0


def test_empty_index_and_k_larger_than_the_index() -> None:
    empty = RouterIndex.build([], np.zeros((0, 128), dtype=np.float32), CONFIG)
    assert len(empty) == 0
    assert Router(CONFIG).route(NamespaceView(empty), "weather", ENCODER.encode(["weather"])) == []
    assert len(ask("weather", k=50)) == len(TOOLS)
    assert ask("weather", k=0) == []


def test_tags_filter_keeps_only_tools_with_every_tag() -> None:
    assert {c.name for c in ask("weather", k=5, tags=["weather"])} == {"get_weather", "天气预报"}
    assert [c.name for c in ask("weather", k=5, tags=["WEATHER", "geo"])] == ["get_weather"]
    assert ask("weather", tags=["nope"]) == []


def test_min_score_filters_even_the_fallback() -> None:
    """Nothing below min_score, ever: it used to fall back to the pinned tool (score < 5)."""
    passing = ask("translate this text", k=5, min_score=0.5)
    assert passing and all(c.score >= 0.5 for c in passing)
    assert ask("translate this text", min_score=5.0) == []
    no_signal = Router(CONFIG).route(NamespaceView(INDEX), "zzqx vvbn", None, RouteOptions(k=3))
    assert [c.name for c in no_signal] == ["search_web"]  # the pinned default
    floor = no_signal[0].score
    assert (
        Router(CONFIG).route(
            NamespaceView(INDEX), "zzqx vvbn", None, RouteOptions(k=3, min_score=floor)
        )
        == no_signal
    )
    assert (
        Router(CONFIG).route(
            NamespaceView(INDEX), "zzqx vvbn", None, RouteOptions(k=3, min_score=floor + 0.01)
        )
        == []
    )


def test_no_keyword_match_and_no_vector_falls_back_to_the_pinned_tools_only() -> None:
    """The usage prior orders no fallback: it moves a route only as a feature of a model the
    guard promoted (app/routing/reranker.py)."""
    out = Router(CONFIG).route(NamespaceView(INDEX), "zzqx vvbn", None, RouteOptions(k=3))
    assert [c.name for c in out] == ["search_web"]
    assert out[0].stages["prior"] == pytest.approx(CONFIG.pinned_boost)  # the pin alone


def test_no_keyword_match_uses_the_embedding() -> None:
    out = ask("zzqx vvbn", k=2)
    assert len(out) == 2
    assert all(c.stages["keyword"] == 0.0 for c in out)


def test_chinese_query_finds_the_chinese_card() -> None:
    assert ask("北京天气预报怎么样")[0].name == "天气预报"


@pytest.mark.parametrize(
    "query", ["", "   ", "?!.,;", "😀🔥", "天", "a" * 4000, "weather " * 700, "\x00\n\t"]
)
def test_odd_queries_never_raise(query: str) -> None:
    out = ask(query, k=3)
    assert len(out) <= 3
    assert Router(CONFIG).route(NamespaceView(INDEX), query, None) is not None


@pytest.mark.parametrize(
    ("stages", "zero"),
    [
        (frozenset({"keyword"}), {"embedding", "prior", "penalty"}),
        (frozenset({"embedding"}), {"keyword", "prior", "penalty"}),
        (ALL_STAGES - {"prior"}, {"prior"}),
        (ALL_STAGES - {"penalty"}, {"penalty"}),
    ],
)
def test_ablation_flags_switch_stages_off(stages: frozenset[str], zero: set[str]) -> None:
    out = ask("convert money", k=5, stages=stages)
    assert out
    for candidate in out:
        assert all(candidate.stages[s] == 0.0 for s in zero)
        if "penalty" not in stages:
            assert candidate.missing_required == ()


def test_single_vector_and_segment_vectors_are_both_accepted() -> None:
    query = "Convert 20 EUR to USD. Then translate the text to French."
    whole = ENCODER.encode([query])
    assert Router(CONFIG).route(NamespaceView(INDEX), query, whole[0])
    assert Router(CONFIG).route(NamespaceView(INDEX), query, ENCODER.encode(query_texts(query)))


def test_caller_errors_raise() -> None:
    with pytest.raises(ValueError, match="dimension"):
        Router(CONFIG).route(NamespaceView(INDEX), "weather", np.ones(3, dtype=np.float32))
    with pytest.raises(ValueError, match="unknown stages"):
        Router(CONFIG, frozenset({"vibes"})).route(NamespaceView(INDEX), "weather", None)
    with pytest.raises(ValueError, match="unique"):
        build((TOOLS[0], TOOLS[0]))
    with pytest.raises(ValueError, match="shape"):
        RouterIndex.build(TOOLS, np.zeros((2, 4)), CONFIG)


def test_unusable_query_vector_is_ignored() -> None:
    nan = np.full(128, np.nan, dtype=np.float32)
    out = Router(CONFIG).route(NamespaceView(INDEX), "weather", nan)
    assert out[0].name in {"get_weather", "天气预报"}
    assert all(c.stages["embedding"] == 0.0 for c in out)


def test_index_exposes_names_positions_and_pins() -> None:
    assert len(INDEX) == len(TOOLS)
    assert INDEX.names[0] == "get_weather"
    assert INDEX.names[INDEX.positions["search_web"]] == "search_web"
    assert [INDEX.names[i] for i in INDEX.pinned] == ["search_web"]
    assert not hasattr(INDEX, "docs")  # the caller owns the cards (memory at 100k tools)


def _many_tools(n: int = 120) -> tuple[ToolDoc, ...]:
    """Look-alike tools of one domain, each requiring 0-3 parameters of assorted kinds."""
    rng = np.random.default_rng(3)
    kinds = [
        ("order_id", {"type": "string"}),
        ("amount", {"type": "number"}),
        ("email", {"type": "string", "format": "email"}),
        ("date", {"type": "string", "format": "date"}),
        ("city", {"type": "string"}),
    ]
    words = [
        "order",
        "refund",
        "invoice",
        "shipment",
        "customer",
        "payment",
        "parcel",
        "city",
        "weather",
        "report",
    ]
    docs = []
    for i in range(n):
        required = [kinds[j] for j in rng.choice(len(kinds), int(rng.integers(0, 4)), False)]
        picked = " ".join(rng.choice(words, 4))
        docs.append(
            ToolDoc(
                name=f"tool_{i}_{picked.split()[0]}",
                summary="",
                description=f"Handles {picked} requests number {i}.",
                parameters={
                    "type": "object",
                    "properties": dict(required),
                    "required": [name for name, _ in required],
                },
            )
        )
    return tuple(docs)


QUERIES_MANY = (
    "refund the order",
    "refund order A123 for 20 dollars",
    "send the invoice to ana@example.com",
    "weather report for the city on 2026-05-01",
    "where is my parcel",
    "customer payment",
)


@pytest.mark.parametrize("k", [1, 3, 7])
@pytest.mark.parametrize("min_score", [None, 0.6, 0.95])
def test_rule_check_stops_early_with_the_same_top_k(
    k: int, min_score: float | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.routing import rule_check

    index = RouterIndex.build(
        docs := _many_tools(), ENCODER.encode([embedding_text(d) for d in docs]), CONFIG
    )
    checked: list[int] = []
    original = rule_check.RuleCheck.penalties

    def counting(self, index, tools, config):  # type: ignore[no-untyped-def]
        checked.append(len(tools))
        return original(self, index, tools, config)

    monkeypatch.setattr(rule_check.RuleCheck, "penalties", counting)
    for query in QUERIES_MANY:
        vec = ENCODER.encode(query_texts(query))
        lazy = Router(CONFIG).route(
            NamespaceView(index), query, vec, RouteOptions(k=k, min_score=min_score)
        )
        lazy_checked = sum(checked)
        checked.clear()
        with monkeypatch.context() as full_only:
            full_only.setattr(rule_check, "settled", lambda *a: False)
            full = Router(CONFIG).route(
                NamespaceView(index), query, vec, RouteOptions(k=k, min_score=min_score)
            )
        full_checked = sum(checked)
        checked.clear()
        assert [(c.name, c.score, c.missing_required) for c in lazy] == [
            (c.name, c.score, c.missing_required) for c in full
        ], query
        assert lazy_checked <= full_checked
        if min_score is None and k == 1:  # the pool of 50 is rarely needed in full
            assert lazy_checked < full_checked, query


def test_settled_bounds() -> None:
    from app.routing.rule_check import settled

    final = np.array([0.9, 0.7, 0.5])
    assert settled(final, 0.7, 2, None)  # the 2nd best (0.7) is not beaten by ≤ 0.7
    assert not settled(final, 0.71, 2, None)
    assert not settled(final, 0.1, 4, None)  # fewer checked than k
    assert settled(final, 0.3, 4, 0.4)  # nothing left can pass min_score
    assert not settled(final, 0.65, 3, 0.6)  # only two pass min_score so far
