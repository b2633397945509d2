"""The answer to one step as the API returns it: candidates, route id, tool schemas, tokens."""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Iterable
from typing import Any

from app.loop.events import RANDOM_BYTES
from app.routing import Candidate
from app.routing.pipeline import SCORE_DECIMALS
from app.schemas import (
    InvalidContext,
    RouteCandidate,
    RouteRequest,
    RouteResponse,
    StepRead,
    TokenEstimate,
)
from app.tools.live_index import Snapshot
from registry.formats import exported_name, from_card
from registry.tool_search import definition_format, search_result

TOKEN_METHOD = "ceil(characters / 4) of the compact JSON of the tool list (OpenAI's rule of thumb)"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def estimate_tokens(tools: Iterable[dict[str, Any]]) -> int:
    """ceil(characters / 4) of the compact JSON list, counted one tool at a time.

    Equal to measuring ``json.dumps(list(tools))`` without ever building the whole list or
    its text (a namespace of 100,000 tools would briefly hold hundreds of MB).
    """
    chars, count = 2, 0  # the brackets
    for tool in tools:
        chars += len(_compact(tool))
        count += 1
    return math.ceil((chars + max(count - 1, 0)) / 4)  # plus the commas


class _RandomIds:
    """Route ids: the time they were made (milliseconds since the epoch, 12 hex digits, as
    ``app.loop.events.route_id_time`` reads it: feedback waits for a recent route another
    replica answered, not for an old or made-up id), then 80 random bits, 32 hex digits in
    all. The random bytes are cut from a buffer of ``os.urandom`` refilled 4 KiB at a time:
    one system call per ~400 ids instead of one each (a system call right after a model
    call is not cheap)."""

    def __init__(self, ids_per_refill: int = 409) -> None:
        self._size = RANDOM_BYTES * ids_per_refill
        self._buffer = b""
        self._at = 0
        self._lock = threading.Lock()
        # A forked worker must not cut the same bytes as its parent.
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._buffer, self._at, self._lock = b"", 0, threading.Lock()

    def __call__(self) -> str:
        with self._lock:
            if self._at + RANDOM_BYTES > len(self._buffer):
                self._buffer, self._at = os.urandom(self._size), 0
            start = self._at
            self._at += RANDOM_BYTES
            random = self._buffer[start : start + RANDOM_BYTES]
        return f"{time.time_ns() // 1_000_000:012x}{random.hex()}"


new_route_id = _RandomIds()


def _namespace_tokens(snapshot: Snapshot, fmt: str) -> int:
    """Tokens of the whole namespace in `fmt`, memoised on the immutable snapshot."""
    cache: dict[str, int] = snapshot.memo.setdefault("tokens", {})
    if fmt not in cache:
        cache[fmt] = estimate_tokens(from_card(c, fmt) for c in snapshot.cards.values())
    return cache[fmt]


def _answer_candidate(candidate: Candidate, summary: str) -> RouteCandidate:
    return RouteCandidate(
        name=candidate.name,
        summary=summary,
        score=round(candidate.score, SCORE_DECIMALS),
        # + 0.0: a part rounded to -0.0 shows as 0.0
        stages={k: round(v, SCORE_DECIMALS) + 0.0 for k, v in candidate.stages.items()},
        confidence=candidate.confidence,
        missing_required=list(candidate.missing_required),
        invalid_context=[
            InvalidContext(parameter=p, reason=r) for p, r in candidate.invalid_context
        ],
        part=candidate.part,
    )


def _add_tools(
    response: RouteResponse,
    snapshot: Snapshot | None,
    candidates: list[Candidate],
    request: RouteRequest,
) -> None:
    """The returned tools in the agent's format (or the platform's tool-search result that
    refers to them), renamed ones mapped back, and the tokens they take against the whole
    namespace's."""
    if snapshot is None:
        response.tools = search_result(request.format, [], call_id=request.call_id)
        response.tokens = TokenEstimate(returned=0, namespace_total=0, saved=0, method=TOKEN_METHOD)
        return
    fmt = definition_format(request.format)
    # Each returned card decoded once (the snapshot keeps them as JSON: tools/live_index.py).
    tools = [from_card(snapshot.cards[c.name], fmt) for c in candidates]
    returned = estimate_tokens(tools)
    total = _namespace_tokens(snapshot, fmt)
    response.tools = search_result(request.format, tools, call_id=request.call_id)
    renamed = {
        exported: c.name for c in candidates if (exported := exported_name(c.name, fmt)) != c.name
    }
    response.tool_names = renamed or None
    response.tokens = TokenEstimate(
        returned=returned, namespace_total=total, saved=total - returned, method=TOKEN_METHOD
    )


def route_response(
    request: RouteRequest,
    snapshot: Snapshot | None,
    candidates: list[Candidate],
    model: str,
    parts: list[str] | None = None,
) -> RouteResponse:
    """The API's answer for the ranked ``candidates`` of ``snapshot`` (None: no namespace);
    ``parts``: the step's parts as read, when it was read as several."""
    summaries = snapshot.summaries if snapshot else {}
    response = RouteResponse(
        route_id=new_route_id(),
        namespace=request.namespace,
        model=model,
        fit="ok" if candidates else "none",
        candidates=[_answer_candidate(c, summaries[c.name]) for c in candidates],
        step_read=StepRead.of(request.query),
        parts=parts,
    )
    if request.format != "raw":
        _add_tools(response, snapshot, candidates, request)
    return response
