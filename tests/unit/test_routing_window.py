"""Which part of a long step the router reads (app/routing/window.py)."""

from __future__ import annotations

import numpy as np

from app.embedding.encoders import FakeEncoder
from app.routing import (
    NamespaceView,
    RouteOptions,
    Router,
    RouterConfig,
    RouterIndex,
    ToolDoc,
    embedding_text,
)
from app.routing.parts import query_texts
from app.routing.signals import analyse_query
from app.routing.window import STEP_HEAD, STEP_TAIL, STEP_WHOLE, step_window, window_bounds

TURN = "User: what is the weather like in Paris this week\nAssistant: Mild and dry.\n"
CONVERSATION = TURN * (5900 // len(TURN)) + "User: show me the invoice of order o100234"


def test_a_step_up_to_the_limit_is_read_whole() -> None:
    for step in ("", "weather in Paris", "x " * (STEP_WHOLE // 2)):
        assert step_window(step) == step
        assert window_bounds(step) is None


def test_a_longer_step_is_read_as_its_head_and_its_tail_cut_at_whitespace() -> None:
    head, tail = window_bounds(CONVERSATION) or (0, 0)
    assert STEP_HEAD - 20 <= head <= STEP_HEAD and STEP_TAIL - 20 <= tail <= STEP_TAIL
    window = step_window(CONVERSATION)
    assert window == f"{CONVERSATION[:head]}\n…\n{CONVERSATION[-tail:]}"
    start = len(CONVERSATION) - tail
    for cut in (head, start):  # no word is cut in two
        assert CONVERSATION[cut - 1].isspace() or CONVERSATION[cut].isspace()
    assert window.endswith("User: show me the invoice of order o100234")
    unbroken = "x" * 6000  # no whitespace to cut at: the exact sizes
    assert window_bounds(unbroken) == (STEP_HEAD, STEP_TAIL)


def test_every_stage_reads_the_same_window() -> None:
    texts = query_texts(CONVERSATION)
    assert texts[0] == step_window(CONVERSATION)
    assert all(len(t) <= STEP_HEAD + STEP_TAIL + 3 for t in texts)
    doc = ToolDoc(name="get_invoice", summary="", description="The invoice of an order.")
    index = RouterIndex.build([doc], np.ones((1, 4), dtype=np.float32), RouterConfig())
    rows = analyse_query(index, CONVERSATION, texts)
    assert rows.text == texts[0] and rows.texts == texts
    middle = CONVERSATION[:3000] + "zyzzyva " + CONVERSATION[3000:]  # a word in the unread middle
    assert "zyzzyva" not in analyse_query(index, middle).tokens


def test_the_step_at_the_end_of_a_long_conversation_is_read() -> None:
    """Reading the head (as the router did) never saw a step past its first 8,000 characters:
    here the order id at the very end supplies get_invoice's order_id."""
    encoder = FakeEncoder(dim=128)
    order_id = {"type": "string", "pattern": "^o[0-9]{6,}$"}
    docs = [
        ToolDoc(name="get_weather", summary="", description="Current weather in a city."),
        ToolDoc(
            name="get_invoice",
            summary="",
            description="The invoice of an order, as PDF.",
            parameters={
                "type": "object",
                "properties": {"order_id": order_id},
                "required": ["order_id"],
            },
        ),
        ToolDoc(name="send_email", summary="", description="Send an email message."),
    ]
    vectors = encoder.encode([embedding_text(d) for d in docs])
    index = RouterIndex.build(docs, vectors, RouterConfig())
    step = TURN * (12000 // len(TURN)) + "User: show me the invoice of order o100234"
    ranked = Router(RouterConfig()).route(
        NamespaceView(index), step, encoder.encode(query_texts(step)), RouteOptions(k=3)
    )
    by_name = {c.name: c for c in ranked}
    assert by_name["get_invoice"].missing_required == ()
    assert by_name["get_invoice"].score > by_name["send_email"].score
