"""Pure parts of the dashboard: session tokens, filters, charts, card rows."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

import pytest

from app.dashboard import auth, charts, gauges
from app.dashboard.cards import schema_rows
from app.dashboard.data import timeline
from app.dashboard.filters import parse_filters
from app.dashboard.web import safe_next
from app.keys.store import KeyStore
from tests.conftest import ADMIN_KEY, make_settings
from tests.dashboard.conftest import environment_key

VIEWER_KEY = "test-dashboard-key-0123456789"
SETTINGS = make_settings("sqlite:///unused.db", dashboard_keys=(VIEWER_KEY,))
KEYS = KeyStore.from_settings(SETTINGS)
NOW = 1_800_000_000.0


def test_a_token_round_trips_and_never_holds_the_key() -> None:
    record = KEYS.resolve(ADMIN_KEY)
    assert record is not None
    token = auth.issue(record, now=NOW)
    assert ADMIN_KEY not in token and record.digest not in token
    viewer = auth.verify(token, KEYS, now=NOW + 60)
    assert viewer == auth.Viewer("admin", int(NOW) + auth.SESSION_SECONDS, None, record.id)


def test_roles_come_from_the_key_lists() -> None:
    assert getattr(auth.key_for_login(ADMIN_KEY, KEYS), "role", None) == "admin"
    assert getattr(auth.key_for_login(VIEWER_KEY, KEYS), "role", None) == "dashboard"
    assert auth.key_for_login("test-agent-key-0123456789", KEYS) is None
    assert auth.key_for_login("", KEYS) is None


def test_forged_expired_and_revoked_tokens_are_refused() -> None:
    token = auth.issue(environment_key(VIEWER_KEY), now=NOW)
    key_id, expires, nonce, signature = token.split(".")
    admin_id = environment_key(ADMIN_KEY, "admin").id
    assert auth.verify(token, KEYS, now=NOW) is not None
    assert auth.verify(f"{admin_id}.{expires}.{nonce}.{signature}", KEYS, now=NOW) is None
    assert auth.verify(f"{key_id}.{int(expires) + 1}.{nonce}.{signature}", KEYS, now=NOW) is None
    assert auth.verify(f"{key_id}.{expires}.{nonce}.{'0' * 64}", KEYS, now=NOW) is None
    assert auth.verify(token, KEYS, now=NOW + auth.SESSION_SECONDS + 1) is None
    revoked = KeyStore.from_settings(make_settings("sqlite:///unused.db", dashboard_keys=()))
    assert auth.verify(token, revoked, now=NOW) is None
    for junk in ("", "x", "a.b.c.d", "admin.notanumber.n.s", "admin.1.n.s.extra"):
        assert auth.verify(junk, KEYS, now=NOW) is None


def test_a_token_signed_with_an_unknown_key_is_refused() -> None:
    token = auth.issue(environment_key("not-a-configured-key-xxxxxxxx", "admin"), now=NOW)
    assert auth.verify(token, KEYS, now=NOW) is None


def test_an_agent_key_signs_no_session() -> None:
    token = auth.issue(environment_key("test-agent-key-0123456789", "agent"), now=NOW)
    assert auth.verify(token, KEYS, now=NOW) is None


def test_next_is_never_an_open_redirect() -> None:
    assert safe_next("/dashboard/tools?sort=name") == "/dashboard/tools?sort=name"
    for bad in (
        "https://evil.example",
        "//evil.example",
        "/v1/tools",
        "/dashboard\\@evil",
        "/dashboard/login",
        None,
        "",
    ):
        assert safe_next(bad) == "/dashboard"


def test_filters_default_and_presets() -> None:
    now = datetime(2026, 11, 29, 12, 30, tzinfo=UTC)
    default = parse_filters({}, now)
    assert (default.range, default.since, default.until, default.bucket) == (
        "7d",
        now - timedelta(days=7),
        None,
        "hour",
    )
    month = parse_filters({"range": "30d", "namespace": "team-b"}, now)
    assert (month.bucket, month.namespace) == ("day", "team-b")
    everything = parse_filters({"range": "all", "bucket": "hour"}, now)
    assert (everything.since, everything.bucket) == (None, "day")  # hours: too many to draw
    assert parse_filters({"range": "90d", "bucket": "hour"}, now).bucket == "day"
    assert parse_filters({"range": "30d", "bucket": "hour"}, now).bucket == "hour"
    long = {"since": "2026-01-01", "until": "2026-11-01", "bucket": "hour"}
    assert parse_filters(long, now).bucket == "day"


def test_custom_dates_cover_whole_days_and_junk_falls_back() -> None:
    now = datetime(2026, 11, 29, tzinfo=UTC)
    custom = parse_filters({"since": "2026-11-01", "until": "2026-11-03"}, now)
    assert custom.range == "custom"
    assert custom.since == datetime(2026, 11, 1, tzinfo=UTC)
    assert custom.until == datetime(2026, 11, 4, tzinfo=UTC)
    assert custom.query()["since"] == "2026-11-01"
    junk = parse_filters({"range": "1y", "bucket": "minute", "namespace": "<b>", "since": "x"}, now)
    assert (junk.range, junk.bucket, junk.namespace) == ("7d", "hour", None)


def test_nice_ticks() -> None:
    assert charts.nice_ticks(7) == [0, 2, 4, 6, 8]
    assert charts.nice_ticks(100) == [0, 25, 50, 75, 100]
    assert charts.nice_ticks(0) == [0.0, 1.0]


def test_charts_escape_their_text_and_leave_gaps() -> None:
    starts = [datetime(2026, 11, 29, h, tzinfo=UTC) for h in range(3)]
    svg = charts.line_chart(
        starts,
        [charts.Series("<b>hit</b>", [0.5, None, 1.0], "s-hit1")],
        bucket="hour",
        title="a <script> title",
    )
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert "&lt;b&gt;hit&lt;/b&gt;" in svg
    assert svg.count("M") >= 2  # the None splits the line in two
    assert "style=" not in svg  # the CSP allows no inline styles


SVG = "{http://www.w3.org/2000/svg}"
LABEL_HEIGHT = 12  # dashboard.css: .point is 12px


def point_labels(svg: str) -> list[tuple[float, float, float, str]]:
    """(left, right, baseline, text) of each point label, its width as charts reckons it."""
    boxes = []
    for text in ET.fromstring(svg).iter(f"{SVG}text"):
        if "point" not in text.get("class", "").split():
            continue
        x, y, words = float(text.get("x", 0)), float(text.get("y", 0)), text.text or ""
        width = len(words) * charts.LABEL_CHAR_WIDTH
        left = x - width if text.get("text-anchor") == "end" else x
        boxes.append((left, left + width, y, words))
    return boxes


def overlap(a: tuple[float, float, float, str], b: tuple[float, float, float, str]) -> bool:
    return a[0] < b[1] and b[0] < a[1] and abs(a[2] - b[2]) < LABEL_HEIGHT


@pytest.mark.parametrize("rate", [1.0, 0.5, 0.0, 0.03])
@pytest.mark.parametrize("buckets", [1, 5])
def test_equal_hit_rates_get_labels_that_do_not_overlap(rate: float, buckets: int) -> None:
    """One bucket of feedback where hit@1 equals hit@k (every hit was a first candidate)
    wrote both labels at the same spot; at the top, the bottom and the right edge too."""
    starts = [datetime(2026, 11, 29, h, tzinfo=UTC) for h in range(buckets)]
    lone = [None] * (buckets - 1) + [rate]  # the last bucket: near the right edge
    svg = charts.line_chart(
        starts,
        [charts.Series("hit@1", lone, "s-hit1"), charts.Series("hit@k", lone, "s-hitk")],
        bucket="hour",
        title="hit@1 and hit@k over time",
    )
    first, second = point_labels(svg)
    assert {first[3], second[3]} == {f"hit@1 {rate:.1%}", f"hit@k {rate:.1%}"}
    assert not overlap(first, second), (first, second)
    for left, right, baseline, _ in (first, second):  # inside the plot, above the x labels
        assert left >= charts.LEFT and right <= 820 - charts.RIGHT
        assert charts.TOP < baseline <= 260 - charts.BOTTOM


def test_close_hit_rates_are_labelled_apart_and_far_ones_where_they_are() -> None:
    start = [datetime(2026, 11, 29, tzinfo=UTC)]
    close = [charts.Series("hit@1", [0.5], "s-hit1"), charts.Series("hit@k", [0.52], "s-hitk")]
    a, b = point_labels(charts.line_chart(start, close, bucket="day", title="t"))
    assert not overlap(a, b)
    far = [charts.Series("hit@1", [0.2], "s-hit1"), charts.Series("hit@k", [0.9], "s-hitk")]
    svg = charts.line_chart(start, far, bucket="day", title="t")
    frame_y = {0.2: 14 + 206 * 0.8, 0.9: 14 + 206 * 0.1}  # TOP + plot height * (1 - value)
    assert [round(y, 1) for _, _, y, _ in point_labels(svg)] == [
        round(frame_y[0.2] + 4, 1),
        round(frame_y[0.9] + 4, 1),
    ]


def test_spread_keeps_labels_a_gap_apart_within_the_bounds() -> None:
    assert charts.spread([50, 50], 14, 0, 100) == [50, 64]
    assert charts.spread([100, 100], 14, 0, 100) == [86, 100]  # pushed up from the bottom
    assert charts.spread([0, 0], 14, 10, 100) == [10, 24]  # pushed down from the top
    assert charts.spread([90, 10], 14, 0, 100) == [90, 10]  # far apart: where they were
    assert charts.spread([60, 55, 50], 10, 0, 200) == [70, 60, 50]  # order given is kept


def test_empty_charts_say_so() -> None:
    assert "No feedback" in charts.line_chart([], [], bucket="day", title="t")
    assert "No routes" in charts.bar_chart([], [], bucket="day", title="t")
    assert "No routes" in gauges.latency_chart([("p50", None)], title="t")


def test_schema_rows_flatten_nested_objects() -> None:
    schema = {
        "type": "object",
        "required": ["city"],
        "properties": {
            "city": {"type": "string", "description": "城市名"},
            "unit": {"type": "string", "enum": ["c", "f"]},
            "where": {"type": "object", "properties": {"lat": {"type": "number"}}},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    }
    rows = {r.path: r for r in schema_rows(schema)}
    assert list(rows) == ["city", "unit", "where", "where.lat", "tags"]
    assert rows["city"].required and rows["city"].description == "城市名"
    assert rows["unit"].constraints == "one of 'c', 'f'"
    assert rows["tags"].type == "array of string"
    assert schema_rows(None) == []


def test_share_chart_shows_counts_and_shares() -> None:
    svg = gauges.share_chart([("<a>", 3, "s-hit1"), ("b", 1, "s-miss")], title="t")
    assert "&lt;a&gt;" in svg and "75.0%" in svg and "25.0%" in svg
    assert "No feedback" in gauges.share_chart([("a", 0, "s-hit1")], title="t")


def test_timeline_fills_gaps_after_the_first_data_only() -> None:
    now = datetime(2026, 11, 29, 12, 30, tzinfo=UTC)
    filters = parse_filters({"range": "24h", "bucket": "hour"}, now)
    buckets = [
        {
            "start": datetime(2026, 11, 29, 9, tzinfo=UTC),
            "routes": 4,
            "feedback": 4,
            "hit_at_1": 1,
            "hit_at_k": 3,
        },
        {"start": "2026-11-29 11:00:00", "routes": 2, "feedback": 0, "hit_at_1": 0, "hit_at_k": 0},
    ]
    line = timeline(buckets, filters, now)
    assert [s.hour for s in line.starts] == [9, 10, 11, 12]
    assert line.routes == [4, 0, 2, 0]
    assert line.hit_at_1 == [0.25, None, None, None]
    assert line.hit_at_k == [0.75, None, None, None]
    assert timeline([], filters, now).starts == []
