"""Signals weighed per step–card pair across scripts (app/routing/language.py), by hand and
with fake vectors: no model."""

from __future__ import annotations

import numpy as np
import pytest

from app.embedding.batching import BatchingEncoder
from app.embedding.encoders import FakeEncoder, MixEncoder, multilingual_dims
from app.routing import NamespaceView, RouteOptions, Router, RouterConfig, RouterIndex, ToolDoc
from app.routing.fusion import LanguageView, language_parts, weighted_zscore, zscore
from app.routing.language import (
    Visibility,
    all_visible,
    card_cjk_share,
    cjk_share,
    pair_visibility,
    with_lead,
)

CONFIG = RouterConfig()


@pytest.mark.parametrize(
    ("text", "share"),
    [
        ("帮我取消订单 o100234", 1.0),  # the order id is no language
        ("Send 张三 an email", 0.25),  # two characters make one word, against three words
        ("Where is SF1234567890123?", 0.0),
        ("", 0.0),
        ("🙂 42", 0.0),
        ("東京の天気", 1.0),
        ("서울 날씨", 1.0),
    ],
)
def test_cjk_share_of_a_text(text: str, share: float) -> None:
    assert cjk_share(text) == pytest.approx(share)


def test_a_cards_share_is_its_prose_not_its_identifiers() -> None:
    chinese = ToolDoc(
        name="request_fapiao_for_order",
        summary="开具增值税发票",
        description="为订单开票",
        parameters={"properties": {"order_id": {"description": "订单号"}}},
    )
    english = ToolDoc(name="get_invoice", summary="Get an invoice", description="A PDF copy.")
    assert card_cjk_share(chinese) == 1.0
    assert card_cjk_share(english) == 0.0


def test_pair_visibility_by_hand() -> None:
    vis = pair_visibility([1.0, 0.0, 0.5], np.array([0.0, 1.0, 0.5]))
    # BM25: p·r + (1 − p)(1 − r); MiniLM: (1 − p)(1 − r)
    np.testing.assert_allclose(vis.keyword, [[0, 1, 0.5], [1, 0, 0.5], [0.5, 0.5, 0.5]])
    np.testing.assert_allclose(vis.english, [[0, 0, 0], [1, 0, 0.5], [0.5, 0, 0.25]])
    np.testing.assert_array_equal(vis.keyword, vis.keyword_pair)


def test_the_leads_visibility_scales_every_weight_of_its_row() -> None:
    vis = pair_visibility([0.0, 0.0], np.array([0.0, 1.0, 0.0]))
    # row 0 leads with the English card 0, row 1 with the Chinese card 1
    led = with_lead(vis, np.array([[0.9, 0.5, 0.1], [0.2, 0.8, 0.3]]))
    np.testing.assert_allclose(led.keyword, [[1, 0, 1], [0, 0, 0]])
    np.testing.assert_allclose(led.english, [[1, 0, 1], [0, 0, 0]])
    np.testing.assert_array_equal(led.keyword_pair, vis.keyword_pair)  # populations unchanged
    # one multilingual row stands for every text
    one = with_lead(vis, np.array([0.2, 0.8, 0.3]))
    np.testing.assert_allclose(one.keyword, [[0, 0, 0], [0, 0, 0]])


def test_all_visible_only_without_cjk_anywhere() -> None:
    assert all_visible([0.0, 0.0], np.zeros(3))
    assert not all_visible([0.0, 0.1], np.zeros(3))
    assert not all_visible([0.0], np.array([0.0, 0.9]))


def test_weighted_zscore_by_hand() -> None:
    rows = np.array([[1.0, 2.0, 3.0, 100.0]])
    # equal weights: the plain z-score
    np.testing.assert_allclose(weighted_zscore(rows, np.ones(4)), zscore(rows), rtol=1e-6)
    # the last tool cannot be read: the population is [1, 2, 3] (mean 2, std √(2/3))
    z = weighted_zscore(rows, np.array([[1.0, 1.0, 1.0, 0.0]]))
    np.testing.assert_allclose(z[0, :3], [-1.2247449, 0.0, 1.2247449], rtol=1e-6)
    assert z[0, 3] == pytest.approx((100 - 2) / np.sqrt(2 / 3))
    assert not weighted_zscore(rows, np.zeros((1, 4))).any()  # nothing readable
    assert not weighted_zscore(np.full((1, 3), 7.0), np.ones(3)).any()  # constant


def test_language_parts_by_hand() -> None:
    """One step in Chinese, cards [English, Chinese, English]; lead = the English card 0."""
    config = RouterConfig(keyword_weight=0.2, embedding_weight=0.8)
    keyword = np.array([[0.0, 3.0, 0.0]])
    mixed = np.array([[0.1, 0.9, 0.2]])
    multi = np.array([[0.7, 0.4, 0.1]])
    vis = with_lead(pair_visibility([1.0], np.array([0.0, 1.0, 0.0])), multi)
    kw, emb = language_parts(keyword, mixed, LanguageView(vis, multi), config)
    assert kw is not None
    # the lead (card 0) cannot be matched by BM25: no keyword weight anywhere
    np.testing.assert_allclose(kw, 0.0, atol=1e-7)
    # MiniLM reads nothing of a Chinese step: the whole weight on the multilingual z-score
    np.testing.assert_allclose(emb, 1.0 * zscore(multi), rtol=1e-5)


def test_language_parts_keep_the_weights_when_everything_is_visible() -> None:
    config = RouterConfig(keyword_weight=0.2, embedding_weight=0.8)
    keyword = np.array([[0.0, 3.0, 1.0]])
    mixed = np.array([[0.1, 0.9, 0.2]])
    multi = np.array([[0.7, 0.4, 0.1]])
    vis = with_lead(pair_visibility([0.0], np.zeros(3)), multi)
    kw, emb = language_parts(keyword, mixed, LanguageView(vis, multi), config)
    np.testing.assert_allclose(kw, 0.2 * zscore(keyword), rtol=1e-5)
    np.testing.assert_allclose(emb, 0.8 * zscore(mixed), rtol=1e-5)


def test_what_a_blind_signal_loses_goes_to_the_multilingual_cosine() -> None:
    """Per tool the keyword and embedding weights add up to wk + we whatever the pair."""
    config = RouterConfig(keyword_weight=0.3, embedding_weight=0.7)
    ones = np.ones((2, 3))
    vis = Visibility(ones, ones, np.array([[1, 0.5, 0], [0.2, 0, 1]]), ones * 0.5)
    # the same row for the three signals: each tool's parts must add up to (wk + we)·z
    rows = np.array([[3.0, 1.0, 2.0], [3.0, 1.0, 2.0]])
    kw, emb = language_parts(rows, rows, LanguageView(vis, rows), config)
    assert kw is not None
    np.testing.assert_allclose(kw + emb, (0.3 + 0.7) * zscore(rows), rtol=1e-5)


# Fake vectors: the first 4 columns play the English-only model, the last 4 the multilingual
# one. The English cards' first block is informative; for a Chinese step it points anywhere.
NAMES = ("send_email", "create_event", "book_meeting_room")
DOCS = [
    ToolDoc("send_email", "Send an email", "Send an email message to someone now."),
    ToolDoc("create_event", "Create a calendar event", "Add a meeting to the calendar."),
    ToolDoc(
        "book_meeting_room", "预订会议室", "预订公司的实体会议室，会议改到别的时间也可以重新预订。"
    ),
]
CARDS = np.array(
    [
        [1, 0, 0, 0, 1, 0, 0, 0],
        [0, 1, 0, 0, 0, 1, 0, 0],
        [0, 0, 1, 0, 0, 0, 1, 0],
    ],
    dtype=np.float32,
)
# "给张三发邮件说会议改到下午三点": the multilingual half says send_email; MiniLM's half, which
# cannot read Chinese, leans to create_event; BM25 matches 会议 in the Chinese card.
STEP = "给张三发邮件说会议改到下午三点"
STEP_VEC = np.array([0.1, 0.9, 0.0, 0.0, 0.9, 0.3, 0.2, 0.0], dtype=np.float32)


def names(index: RouterIndex, query: str, vec: np.ndarray, **kw: object) -> list[str]:
    return [
        c.name
        for c in Router(CONFIG).route(NamespaceView(index), query, vec, RouteOptions(k=3, **kw))
    ]  # type: ignore[arg-type]


def test_a_chinese_step_reaches_the_english_card_the_multilingual_part_sees() -> None:
    blind = RouterIndex.build(DOCS, CARDS, CONFIG)
    seeing = RouterIndex.build(DOCS, CARDS, CONFIG, multilingual=(4, 8))
    assert names(blind, STEP, STEP_VEC)[0] != "send_email"
    assert names(seeing, STEP, STEP_VEC)[0] == "send_email"
    assert seeing.cjk_share.tolist() == [0.0, 0.0, 1.0]


def test_stage_parts_still_add_up_across_languages() -> None:
    index = RouterIndex.build(DOCS, CARDS, CONFIG, multilingual=(4, 8))
    for candidate in Router(CONFIG).route(NamespaceView(index), STEP, STEP_VEC, RouteOptions(k=3)):
        assert sum(candidate.stages.values()) == pytest.approx(candidate.score, abs=1e-6)
    [best] = Router(CONFIG).route(NamespaceView(index), STEP, STEP_VEC, RouteOptions(k=1))
    # relative: the best tool's keyword + embedding is 1 (votes are added on that scale)
    assert best.stages["keyword"] + best.stages["embedding"] == pytest.approx(1.0)


def test_without_cjk_anywhere_the_answer_is_the_same_to_the_last_digit() -> None:
    english = [*DOCS[:2], ToolDoc("get_weather", "Weather now", "Current weather for a city.")]
    cards = CARDS.copy()
    plain = RouterIndex.build(english, cards, CONFIG)
    seeing = RouterIndex.build(english, cards, CONFIG, multilingual=(4, 8))
    vec = np.array([0.2, 0.7, 0.1, 0.0, 0.5, 0.5, 0.0, 0.1], dtype=np.float32)
    for query in ("send a meeting invite", "email Ana and add the meeting"):  # one ask, two
        assert Router(CONFIG).route(NamespaceView(plain), query, vec, RouteOptions(k=3)) == Router(
            CONFIG
        ).route(NamespaceView(seeing), query, vec, RouteOptions(k=3))


def test_the_rule_needs_the_embedding_stage_and_zscore_fusion() -> None:
    index = RouterIndex.build(DOCS, CARDS, CONFIG, multilingual=(4, 8))
    blind = RouterIndex.build(DOCS, CARDS, CONFIG)
    for config in (RouterConfig(fusion="minmax"), RouterConfig(fusion="rrf")):
        assert Router(config).route(
            NamespaceView(index), STEP, STEP_VEC, RouteOptions(k=3)
        ) == Router(config).route(NamespaceView(blind), STEP, STEP_VEC, RouteOptions(k=3))
    keyword_only = frozenset({"keyword", "prior", "penalty"})
    assert Router(CONFIG, keyword_only).route(
        NamespaceView(index), STEP, STEP_VEC, RouteOptions(k=3)
    ) == Router(CONFIG, keyword_only).route(NamespaceView(blind), STEP, STEP_VEC, RouteOptions(k=3))


def test_tags_select_the_tools_before_the_lead_is_chosen() -> None:
    tagged = [
        ToolDoc(d.name, d.summary, d.description, tags=(("mail",) if i else ()))
        for i, d in enumerate(DOCS)
    ]
    index = RouterIndex.build(tagged, CARDS, CONFIG, multilingual=(4, 8))
    # send_email, the multilingual favourite, is filtered out: the lead is among the others
    assert set(names(index, STEP, STEP_VEC, tags=["mail"])) == {"create_event", "book_meeting_room"}


def test_bad_multilingual_columns_are_refused() -> None:
    with pytest.raises(ValueError, match="multilingual columns"):
        RouterIndex.build(DOCS, CARDS, CONFIG, multilingual=(4, 9))
    with pytest.raises(ValueError, match="multilingual columns"):
        RouterIndex.build(DOCS, CARDS, CONFIG, multilingual=(5, 5))


class _Multilingual(FakeEncoder):
    multilingual_dims = (0, 16)


def test_encoders_say_where_their_multilingual_columns_are() -> None:
    assert multilingual_dims(FakeEncoder(8)) is None
    assert multilingual_dims(MixEncoder(FakeEncoder(8), _Multilingual(16), 0.4)) == (8, 24)
    assert multilingual_dims(MixEncoder(_Multilingual(16), FakeEncoder(8), 0.4)) == (0, 16)
    assert multilingual_dims(MixEncoder(FakeEncoder(8), FakeEncoder(4), 0.4)) is None
    batching = BatchingEncoder(MixEncoder(FakeEncoder(8), _Multilingual(16), 0.4))
    assert multilingual_dims(batching) == (8, 24)
