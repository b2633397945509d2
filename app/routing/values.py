"""Values: what kind of value a parameter takes, and which kinds a query text shows.

The rule check (``penalty.py``) asks one question per required parameter: could the step's
text fill it? These detectors answer it without a parser: a parameter's *kind* comes from its
JSON Schema ``type``/``format`` and its name (``contact_email`` → email, ``order_id`` → id,
``start`` with ``format: date-time`` → datetime); a query's *kinds* are the value shapes
found in it by regular expressions (numbers, dates, times, e-mail addresses, URLs, IPs, phone
numbers, id-like tokens, quoted strings, capitalised words). ``FILLS`` says which shapes can
fill which kind.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from app.routing.text import analyse, words


def word_set(text: str) -> frozenset[str]:
    """The space-separated words of ``text`` as a set (keeps long word lists readable)."""
    return frozenset(text.split())


# Parameters whose value is free text: the step's own words are the value.
FREE_TEXT = word_set(
    "text message body content query prompt note comment question description keywords "
    "keyword topic subject search sentence phrase q input instructions"
)
_NUMBER = re.compile(r"\d")
_WORD = re.compile(r"\w\w", re.UNICODE)
_DATE = re.compile(
    r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b|\b(?:19|20)\d{2}\b|"
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}"
    r"(?:st|nd|rd|th)?\b|"
    r"\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|"
    r"\b(?:today|tomorrow|yesterday|tonight|weekend|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday)\b|\b(?:next|last|this)\s+(?:week|month|year)\b",
    re.IGNORECASE,
)
_TIME = re.compile(r"\b\d{1,2}:\d{2}\b|\b\d{1,2}\s*(?:am|pm)\b|\b(?:noon|midnight)\b", re.I)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
_URL = re.compile(r"https?://\S+|\bwww\.\S+|\b[\w-]+\.(?:com|org|net|io|ai|dev|edu|gov|co)\b", re.I)
_PHONE = re.compile(r"\+?\d[\d\s().-]{5,}\d")
_IP = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b")
_QUOTED = re.compile(r"\"[^\"]+\"|“[^”]+”|‘[^’]+’|'[^']{2,}'|`[^`]+`|«[^»]+»|「[^」]+」")
_ID_TOKEN = re.compile(r"\b(?=\w*\d)(?=\w*[A-Za-z])\w{3,}\b|\b\d{3,}\b|#\w+")
_PROPER = re.compile(r"(?<=[^.!?\s]\s)(?!I\b|I')[A-Z][\w'-]*")
_BOOLEAN = re.compile(r"\b(?:yes|no|true|false|enable|disable|on|off|with|without)\b", re.I)
_EXAMPLES = re.compile(
    r"(?:e\.g\.?|eg\.|such as|for example|for instance|like)[:,]?\s*([^)]*)", re.IGNORECASE
)


def value_kind(name: str, schema: Mapping[str, Any]) -> str:
    """The kind of value a parameter takes, from its JSON Schema type/format and its name."""
    parts = words(name)
    fmt = str(schema.get("format", "")).lower()
    kind = str(schema.get("type", "string")).lower()
    last = parts[-1] if parts else ""
    if "email" in parts or fmt == "email":
        return "email"
    if {"url", "uri", "link", "website"} & set(parts) or fmt in ("uri", "url"):
        return "url"
    if "ip" in parts or fmt in ("ipv4", "ipv6"):
        return "ip"
    if {"phone", "mobile", "tel", "telephone", "fax"} & set(parts):
        return "phone"
    if fmt == "date-time" or {"datetime", "timestamp", "when", "at"} & set(parts):
        return "datetime"
    if {"date", "day", "birthday", "dob"} & set(parts) or fmt == "date":
        return "date"
    if last == "time" or fmt == "time":
        return "time"
    if last in ("id", "ids", "uuid", "key", "code", "number", "no") or fmt == "uuid":
        return "id"
    if kind in ("integer", "number"):
        return "number"
    if kind == "boolean":
        return "boolean"
    return "text" if name.lower() in FREE_TEXT or last in FREE_TEXT else "string"


def example_values(schema: Mapping[str, Any]) -> tuple[frozenset[str], ...]:
    """Enum values, ``examples`` and the "e.g." list of the description, each as its stems."""
    listed = [*(schema.get("enum") or []), *(schema.get("examples") or [])]
    scalars = tuple(str(v) for v in listed if not isinstance(v, dict | list))
    return _values(scalars, str(schema.get("description", "")))


@lru_cache(maxsize=65536)
def _values(scalars: tuple[str, ...], description: str) -> tuple[frozenset[str], ...]:
    """Cached: parameters that repeat across tools share one compiled value list."""
    raw = list(scalars)
    for match in _EXAMPLES.finditer(description):
        raw += re.split(r",|\bor\b|/|;", match.group(1))
    values = (frozenset(analyse(v)) for v in raw)
    return tuple(dict.fromkeys(v for v in values if v))


_KIND_PATTERNS: dict[str, re.Pattern[str]] = {
    "number": _NUMBER,
    "date": _DATE,
    "time": _TIME,
    "email": _EMAIL,
    "url": _URL,
    "ip": _IP,
    "phone": _PHONE,
    "quoted": _QUOTED,
    "id": _ID_TOKEN,
    "proper": _PROPER,
    "boolean": _BOOLEAN,
    "words": _WORD,
}


class VisibleKinds:
    """The kinds of values visible in one query text, each looked for only when a rule asks
    for it (a route checks a few tools: most of the twelve searches are never needed)."""

    __slots__ = ("_query", "_seen")

    def __init__(self, query: str) -> None:
        self._query = query
        self._seen: dict[str, bool] = {}

    def any_of(self, kinds: frozenset[str]) -> bool:
        """Whether the query shows a value of any of ``kinds``."""
        for kind in kinds:
            seen = self._seen.get(kind)
            if seen is None:
                pattern = _KIND_PATTERNS.get(kind)
                seen = self._seen[kind] = bool(pattern and pattern.search(self._query))
            if seen:
                return True
        return False


# Which visible value kinds can fill a parameter of each kind.
FILLS: dict[str, frozenset[str]] = {
    "number": frozenset({"number"}),
    "date": frozenset({"date"}),
    "time": frozenset({"time"}),
    "datetime": frozenset({"date", "time"}),
    "email": frozenset({"email"}),
    "url": frozenset({"url"}),
    "ip": frozenset({"ip"}),
    "phone": frozenset({"phone"}),
    "id": frozenset({"id", "quoted", "email", "url", "ip"}),
    "boolean": frozenset({"boolean"}),
    "string": frozenset({"quoted", "proper", "email", "url", "ip"}),
    "text": frozenset({"words"}),
}
