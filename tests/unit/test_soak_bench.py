"""bench.perf.soak's pure parts: the request mix, the percentile, the tally and its report, and
the requests the workers send (the soak itself runs for minutes: docs/BENCHMARKS.md)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from bench.common import percentile
from bench.perf.soak import (
    KEY,
    MIXES,
    Tally,
    Traffic,
    http_request,
    replica_for,
    schedule,
    summarize,
    table,
)

CARD = {"name": "get_weather", "description": "Weather for a city.", "parameters": {}}


def parse(request: bytes) -> tuple[str, dict[str, str], dict[str, object]]:
    head, _, body = request.partition(b"\r\n\r\n")
    first, *lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    assert int(headers["Content-Length"]) == len(body)
    return first, headers, json.loads(body)


@pytest.mark.parametrize("mix", sorted(MIXES))
def test_a_schedule_holds_each_kind_exactly_its_share(mix: str) -> None:
    slots = schedule(MIXES[mix])
    assert len(slots) == 100
    assert Counter(slots) == Counter({k: v for k, v in MIXES[mix].items() if v})
    assert schedule(MIXES[mix], seed=1) != slots  # shuffled ...
    assert schedule(MIXES[mix]) == slots  # ... the same way for the same seed


@pytest.mark.parametrize(
    "mix", [{"route": 90, "write": 5}, {"route": 99, "delete": 1}, {"route": 101, "write": -1}]
)
def test_a_mix_must_give_known_kinds_summing_to_100(mix: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="summing to 100"):
        schedule(mix)


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]  # 1 .. 100
    assert percentile(values, 50) == 51.0  # rank round(0.5 * 99) = 50 (from 0)
    assert percentile(values, 99) == 99.0
    assert percentile(list(reversed(values)), 0) == 1.0
    assert percentile([], 99) == 0.0


def test_only_expected_answers_count_for_latency_and_the_rest_are_errors() -> None:
    tally = Tally()
    tally.add("route", 200, 0.010)
    tally.add("route", 200, 0.030)
    tally.add("route", 503, 5.0)
    tally.add("post", 201, 0.050)
    tally.add("put", "TimeoutError", 30.0)
    report = summarize(tally, seconds=2.0)
    assert report["requests"] == 5
    assert report["requests_per_s"] == 2.5
    assert report["errors"] == {"route 503": 1, "put TimeoutError": 1}
    assert report["error_count"] == 2
    # two answered in time: 10 and 30 ms (nearest rank, round half to even: p50 is the first)
    assert report["kinds"]["route"] == {"requests": 3, "ok": 2, "p50_ms": 10.0, "p99_ms": 30.0}
    assert report["kinds"]["put"]["ok"] == 0
    assert "feedback" not in report["kinds"]
    rows = table(
        {
            "replicas": 2,
            "mix": "default",
            "concurrency": 4,
            "load": report,
            "replica_stats": [
                {"rss_start_mib": 300.0, "rss_end_mib": 320.5, "cpu_s": 12.0, "error_lines": 0}
            ],
        }
    )
    assert "| route | 3 | 2 | 10.0 | 30.0 |" in rows
    assert "| 0 | 300.0 | 320.5 | 12.0 | 0 |" in rows


def test_each_worker_goes_round_robin_from_its_own_replica() -> None:
    assert [replica_for(0, sent, 3) for sent in range(4)] == [0, 1, 2, 0]
    assert [replica_for(2, sent, 3) for sent in range(4)] == [2, 0, 1, 2]
    assert {replica_for(w, 0, 4) for w in range(16)} == {0, 1, 2, 3}  # workers spread


def test_feedback_and_validate_wait_for_a_route_and_use_each_route_id_once() -> None:
    traffic = Traffic(["feedback", "validate", "route", "write"], ["q0", "q1"], [CARD])
    sent = [traffic.next_request() for _ in range(3)]
    assert [kind for kind, _ in sent] == ["route", "route", "route"]  # no route answered yet
    first, headers, body = parse(sent[2][1])
    assert first == "POST /v1/route HTTP/1.1"
    assert headers["Authorization"] == f"Bearer {KEY}"
    assert body == {"query": "q0", "k": 3}

    traffic.answered(
        "route", sent[0][1], 200, b'{"route_id": "r-old", "candidates": [{"name": "a"}]}'
    )
    traffic.answered(
        "route", sent[1][1], 200, b'{"route_id": "r-new", "candidates": [{"name": "b"}]}'
    )
    traffic.answered("route", sent[2][1], 503, b"{}")
    kind, request = traffic.next_request()  # the 4th: a write
    assert kind == "post"
    first, _, body = parse(request)
    assert first == "POST /v1/tools HTTP/1.1" and body["name"] == "soak_1_get_weather"
    kind, request = traffic.next_request()  # the 5th: feedback for the newest route
    assert kind == "feedback"
    assert parse(request)[2] == {"route_id": "r-new", "chosen": "b", "outcome": "success"}
    assert list(traffic.routes) == [("r-old", "a")]  # each route id once
    kind, request = traffic.next_request()  # the 6th: validate the newest left, keep it
    assert kind == "validate"
    assert parse(request)[2] == {"name": "a", "arguments": {}, "route_id": "r-old"}
    assert list(traffic.routes) == [("r-old", "a")]


def test_writes_alternate_a_new_card_and_a_put_of_one_answered() -> None:
    traffic = Traffic(["write"], ["q"], [{**CARD, "name": "PDF&URL"}])
    kind, request = traffic.next_request()
    assert kind == "post" and parse(request)[2]["name"] == "soak_1_PDF_URL"
    assert traffic.next_request()[0] == "post"  # no PUT before a POST was answered
    traffic.answered("post", request, 201, b"{}")
    assert traffic.next_request()[0] == "post"  # the third write
    kind, request = traffic.next_request()  # the fourth
    assert kind == "put" and parse(request)[0] == "PUT /v1/tools/soak_1_PDF_URL HTTP/1.1"
    traffic.answered("post", http_request("POST", "/v1/tools", {"name": "x"}), 409, b"{}")
    assert [card["name"] for card in traffic.written] == ["soak_1_PDF_URL"]
    first, _, body = parse(http_request("PUT", "/v1/tools/x", {"a": 1}))
    assert first == "PUT /v1/tools/x HTTP/1.1" and body == {"a": 1}
