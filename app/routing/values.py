"""Values: what kind of value a parameter takes, and which values of each kind a step shows.

The rule check (``penalty.py``) asks one question per required parameter: does the step hold a
value for it? These detectors answer it without a parser: a parameter's *kind* comes from its
JSON Schema ``type``/``format`` and its name (``contact_email`` → email, ``order_id`` → id,
``start`` with ``format: date-time`` → datetime); a step's values of each *shape* are found by
regular expressions (numbers, dates, times, e-mail addresses, URLs, IPs, phone numbers, id-like
tokens, quoted strings, capitalised words, plain words). ``FILLS`` says which shapes can fill
which kind; each value found is then read as the parameter's JSON type and checked against its
schema by a :data:`ValueCheck` the caller supplies (the service's runs the registry's JSON
Schema validator; the ranking core imports none).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from app.routing.text import STOPWORDS, analyse, words

ValueCheck = Callable[[str, Any], "str | None"]
"""``(a parameter's JSON Schema as compact JSON, a value) → why the value breaks the schema``,
or ``None`` when it satisfies it."""


def word_set(text: str) -> frozenset[str]:
    """The space-separated words of ``text`` as a set (keeps long word lists readable)."""
    return frozenset(text.split())


# Parameters whose value is free text: a string with no pattern, enum, const or format whose
# name (or its last part) is one of these words. Their value is the step's own words.
FREE_TEXT = word_set(
    "text message body content query prompt note comment question description keywords "
    "keyword topic subject search sentence phrase q input instructions"
)
# Keywords that restrict which strings a parameter takes: a value must be checked against them,
# and a word of the step is not its value merely because the card does not explain it.
CONSTRAINTS = ("pattern", "enum", "const", "format")
# Value shapes a step writes in a notation the agent converts ("tomorrow", "5pm",
# "+33 6 12 34 56 78", "Spanish"): the detector's shape is the check, not the schema's
# ``format`` or ``pattern`` (an RFC 3339 date-time or a BCP 47 code is never what a person
# types). Every other shape must satisfy the schema as it stands.
NOTATION_SHAPES = frozenset({"date", "time", "phone", "language"})
# Values of one shape read from a step, at most (the last ones: a long step ends with its ask).
MAX_FOUND = 32
_NUMBER = re.compile(r"(?<![\d.,])-?\d+(?:,\d{3})*(?:\.\d+)?")
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
_LANGUAGE = re.compile(
    r"\b(?:english|spanish|french|german|chinese|mandarin|cantonese|japanese|korean|italian|"
    r"portuguese|russian|arabic|hindi|dutch|swedish|norwegian|danish|finnish|polish|czech|"
    r"turkish|greek|hebrew|persian|vietnamese|thai|indonesian|malay|ukrainian|romanian|"
    r"hungarian|bengali|urdu|tamil|swahili)\b",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"[^\s\"'“”‘’«»「」()\[\]{}<>,;!?]+")
_TRUE = word_set("yes true enable on with")
_EXAMPLES = re.compile(
    r"(?:e\.g\.?|eg\.|such as|for example|for instance|like)[:,]?\s*([^)]*)", re.IGNORECASE
)


def json_type(schema: Mapping[str, Any]) -> str:
    """The JSON type a value of this schema is read as: its first ``type`` other than null,
    ``string`` when it names none."""
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else declared
    types = types if isinstance(types, list) else []
    named = [t for t in types if isinstance(t, str) and t != "null"]
    return named[0].lower() if named else "string"


def constrained(schema: Mapping[str, Any]) -> bool:
    """Whether the schema restricts its strings beyond their type (``CONSTRAINTS``)."""
    return any(key in schema for key in CONSTRAINTS)


def value_kind(name: str, schema: Mapping[str, Any]) -> str:
    """The kind of value a parameter takes, from its JSON Schema type/format and its name.

    An array takes the kind of its items; an object (or an array of objects) is ``object``,
    which only the context can supply. ``text`` (free text) is a string with no pattern, enum,
    const or format whose name, or its last part, is a ``FREE_TEXT`` word.
    """
    kind = json_type(schema)
    if kind == "array":
        items = schema.get("items")
        return value_kind(name, items if isinstance(items, Mapping) else {})
    if kind == "object":
        return "object"
    parts = words(name)
    fmt = str(schema.get("format", "")).lower()
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
    if {"language", "lang", "locale"} & set(parts):
        return "language"
    if last in ("id", "ids", "uuid", "key", "code", "number", "no") or fmt == "uuid":
        return "id"
    if kind in ("integer", "number"):
        return "number"
    if kind == "boolean":
        return "boolean"
    free = name.lower() in FREE_TEXT or last in FREE_TEXT
    return "text" if free and kind == "string" and not constrained(schema) else "string"


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
    "language": _LANGUAGE,
    "token": _TOKEN,
}


def _cleaned(shape: str, match: str) -> str | None:
    """A matched value as the agent would pass it: quotes off, a word's trailing full stop
    or colon off; ``None`` for a plain token that is a stop word (``to``, ``it``, ``me``)."""
    if shape == "quoted":
        return match[1:-1].strip() or None
    if shape == "token":
        match = match.rstrip(".:")
        return match if match and match.lower() not in STOPWORDS else None
    return match


class StepValues:
    """The values of each shape visible in one step, each shape looked for only when a rule
    asks for it (a route checks a few tools: most of the searches are never needed)."""

    __slots__ = ("_found", "_query")

    def __init__(self, query: str) -> None:
        self._query = query
        self._found: dict[str, tuple[str, ...]] = {}

    def found(self, shape: str) -> tuple[str, ...]:
        """The distinct values of ``shape`` in the step, in order, at most the last
        ``MAX_FOUND``."""
        values = self._found.get(shape)
        if values is None:
            pattern = _KIND_PATTERNS.get(shape)
            matches = pattern.findall(self._query) if pattern else []
            cleaned = (_cleaned(shape, m) for m in matches)
            values = tuple(dict.fromkeys(v for v in cleaned if v))[-MAX_FOUND:]
            self._found[shape] = values
        return values


def typed(value: str, kind: str) -> Any:
    """A value read from the step as JSON ``kind`` (``integer``, ``number``, ``boolean``,
    else the string itself); ``None`` when it cannot be read as that type."""
    if kind in ("integer", "number"):
        try:
            number = float(value.replace(",", ""))
        except ValueError:
            return None
        return int(number) if number.is_integer() and abs(number) < 2**53 else number
    if kind == "boolean":
        return value.lower() in _TRUE
    return value


# Ordinary words no selective pattern accepts (a pattern that takes them, such as a file
# name's ``^[^/]+$``, does not tell a value from the words around it).
_PROBES = ("the", "please", "information", "Report", "order 2")


@lru_cache(maxsize=4096)
def selective(schema: str, check: ValueCheck) -> bool:
    """Whether a string schema rejects ordinary words, so that any plain word of the step
    that satisfies it is a value (``es`` for ``^[a-z]{2}$``, ``EUR`` for ``^[A-Z]{3}$``)."""
    return all(check(schema, probe) is not None for probe in _PROBES)


# Which value shapes can fill a parameter of each kind (``text`` and ``object``: none; free
# text is the step's own words, an object only comes from the context).
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
    "language": frozenset({"language", "quoted"}),
    "boolean": frozenset({"boolean"}),
    "string": frozenset({"quoted", "proper", "email", "url", "ip"}),
}
