"""The filter bar: namespace, time range and bucket, read leniently from the query string.

A mangled URL never errors: an unknown value falls back to the default, so a bookmarked
page keeps working after a namespace is gone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from registry.card import NAMESPACE_PATTERN

Bucket = Literal["hour", "day"]
RANGES: dict[str, timedelta | None] = {
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
    "90d": timedelta(days=90),
    "all": None,
}
RANGE_LABELS = {
    "24h": "last 24 hours",
    "7d": "last 7 days",
    "30d": "last 30 days",
    "90d": "last 90 days",
    "all": "all time",
    "custom": "custom dates",
}
DEFAULT_RANGE = "7d"
# The most time buckets a chart draws on a regular axis (hours over 90 days would be 2,160):
# past it, hourly buckets are asked for a range too long for them, and days are shown.
MAX_SLOTS = 2000
_BUCKETS: dict[str, Bucket] = {"hour": "hour", "day": "day"}
# Lower than the 0.8 of /v1/lookalikes: on real catalogs (MiniLM) the pairs agents actually
# confuse sit a little below it, and this page is for looking, not alerting.
DEFAULT_THRESHOLD = 0.7
_NAMESPACE = re.compile(NAMESPACE_PATTERN)


@dataclass(frozen=True, slots=True)
class Filters:
    """What the viewer asked to see; `since`/`until` are resolved, aware UTC times."""

    namespace: str | None
    range: str
    since: datetime | None
    until: datetime | None
    bucket: Bucket
    since_text: str = ""
    until_text: str = ""

    def query(self, **extra: str) -> dict[str, str]:
        """The filters as query parameters, to carry them across pages."""
        params = {"namespace": self.namespace or "", "range": self.range, "bucket": self.bucket}
        if self.range == "custom":
            params.update({"since": self.since_text, "until": self.until_text})
        params.update(extra)
        return {k: v for k, v in params.items() if v}

    @property
    def bucket_seconds(self) -> int:
        return 3600 if self.bucket == "hour" else 86400


def _parse_date(text: str) -> date | None:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        return None


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def parse_filters(params: Mapping[str, str], now: datetime | None = None) -> Filters:
    """Filters from query parameters; dates count when the range is `custom` or not given."""
    now = now or datetime.now(UTC)
    namespace = params.get("namespace", "").strip()
    chosen = params.get("range", "")
    start = _parse_date(params.get("since", ""))
    end = _parse_date(params.get("until", ""))
    if chosen in ("custom", "") and (start or end):
        since = _midnight(start) if start else None
        # the whole last day; the last day there is has no end to count to (it was a 500)
        until = _midnight(end) + timedelta(days=1) if end and end < date.max else None
        chosen, span = "custom", (until or now) - (since or now - timedelta(days=30))
    else:
        start = end = None
        chosen = chosen if chosen in RANGES else DEFAULT_RANGE
        delta = RANGES[chosen]
        since, until, span = (now - delta if delta else None), None, delta or timedelta(days=90)
    bucket = _BUCKETS.get(params.get("bucket", "")) or (
        "hour" if span <= timedelta(days=7) else "day"
    )
    if bucket == "hour" and span > timedelta(hours=MAX_SLOTS):  # a chart it cannot draw
        bucket = "day"
    return Filters(
        namespace=namespace if _NAMESPACE.fullmatch(namespace) else None,
        range=chosen,
        since=since,
        until=until,
        bucket=bucket,
        since_text=start.isoformat() if start else "",
        until_text=end.isoformat() if end else "",
    )


def positive_int(text: str | None) -> int | None:
    """A page or version number from the query string; anything else is None."""
    return int(text) if text and text.isdigit() and 0 < int(text) <= 1_000_000 else None


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a table's rows: its number (from 1) among ``count`` pages of ``size``."""

    number: int
    count: int
    size: int

    @property
    def offset(self) -> int:
        return (self.number - 1) * self.size


def page_of(text: str | None, total: int, size: int) -> Page:
    """The page asked for (anything but a page number is the first), kept within the pages
    ``total`` rows make, so a bookmark past the end shows the last page, not an empty one."""
    count = max(1, -(-total // size))
    return Page(min(positive_int(text) or 1, count), count, size)


def parse_threshold(text: str | None) -> float:
    """The look-alike similarity threshold, kept within 0.5..0.99."""
    try:
        value = float(text or DEFAULT_THRESHOLD)
    except ValueError:
        return DEFAULT_THRESHOLD
    if value != value:  # NaN
        return DEFAULT_THRESHOLD
    return min(max(value, 0.5), 0.99)
