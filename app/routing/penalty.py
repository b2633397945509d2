"""Stage 3, the rule check: which required parameters can neither the query nor the context supply.

A required parameter counts as *suppliable* when any one of these holds:

1. its name is a key of the caller's ``context`` (compared without case, ``_`` or ``-``);
2. the query mentions it: a stem of its name (minus generic words such as ``id`` or ``type``)
   or of a synonym of it;
3. the query contains one of its enum values or one of the examples its description lists
   after "e.g." / "such as" / "for example";
4. the query shows a value of its kind: a number for numeric parameters, a date or time for
   date/time parameters, an e-mail address, a URL, an IP address, a phone number, an id-like
   token for ``*_id`` parameters, a quoted or capitalised string for other string parameters;
5. it is free text (``text``, ``message``, ``query``, ``body``…): the step's own words are it.

Everything about a tool is compiled once, at index build time (:func:`compile_rules`); a query is
analysed once (:func:`query_evidence`); the check itself is set look-ups.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from app.routing.text import (
    STOPWORDS,
    analyse,
    required_params,
    schema_properties,
    stems,
    words,
)

# Name parts that say nothing about what the value is ("user_id" is mentioned by "user").
_GENERIC = frozenset(
    [
        "id",
        "ids",
        "name",
        "type",
        "value",
        "data",
        "info",
        "information",
        "number",
        "num",
        "no",
        "code",
        "key",
        "list",
        "string",
        "text",
        "str",
        "param",
        "input",
        "field",
        "detail",
        "details",
    ]
)
# Parameters whose value is free text: the query itself is the value.
_FREE_TEXT = frozenset(
    [
        "text",
        "message",
        "body",
        "content",
        "query",
        "prompt",
        "note",
        "comment",
        "question",
        "description",
        "keywords",
        "keyword",
        "topic",
        "subject",
        "search",
        "sentence",
        "phrase",
        "q",
        "input",
        "instructions",
    ]
)
# Extra cue words for common parameter names (stems of the key → words that mention it).
_SYNONYMS: dict[str, str] = {
    "locat": "city town place address area region where near country street",
    "citi": "town place location where",
    "countri": "nation state where",
    "region": "area zone where",
    "address": "location street where",
    "destin": "to where trip city",
    "date": "day today tomorrow yesterday week month year when",
    "time": "hour minute now tonight morning afternoon evening when",
    "year": "annual when",
    "durat": "hour minute day week long",
    "languag": "english spanish french german chinese japanese korean italian portuguese "
    "russian arabic hindi translate",
    "email": "mail",
    "user": "me my account",
    "usernam": "user account",
    "quantiti": "how many",
    "amount": "how much",
    "price": "cost how much",
    "queri": "search find look",
    "keyword": "search find",
    "messag": "say tell text",
    "url": "link website site page",
    "gender": "male female man woman boy girl",
}
_NUMBER = re.compile(r"\d")
_WORD = re.compile(r"\w\w", re.UNICODE)
_DATE = re.compile(
    r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b|\b(?:19|20)\d{2}\b|"
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b|"
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


@dataclass(frozen=True, slots=True)
class ParamRule:
    """One required parameter, compiled: what in a query would supply it."""

    name: str
    key: str
    cues: frozenset[str]
    values: tuple[frozenset[str], ...]
    kind: str


@dataclass(frozen=True, slots=True)
class QueryEvidence:
    """What a query offers: its stems and the kinds of values visible in it."""

    stems: frozenset[str]
    kinds: frozenset[str]
    context_keys: frozenset[str]


def context_key(name: str) -> str:
    """A parameter or context key compared without case, ``_``, ``-``, ``.`` or spaces."""
    return re.sub(r"[\W_]+", "", name).lower()


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
    return "text" if name.lower() in _FREE_TEXT or last in _FREE_TEXT else "string"


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


@lru_cache(maxsize=65536)
def name_cues(name: str) -> frozenset[str]:
    """Stems that mention the parameter: its specific name parts and their synonyms."""
    parts = [w for w in words(name) if w not in _GENERIC and w not in STOPWORDS]
    cues = set(analyse(" ".join(parts)))
    for stem in list(cues):
        cues |= stems(_SYNONYMS.get(stem, ""))
    return frozenset(cues)


def compile_rules(parameters: Mapping[str, Any] | None) -> tuple[ParamRule, ...]:
    """The rules of every required parameter of one schema (done once, at build time)."""
    props = schema_properties(parameters)
    return tuple(
        ParamRule(
            name=name,
            key=context_key(name),
            cues=name_cues(name),
            values=example_values(props.get(name, {})),
            kind=value_kind(name, props.get(name, {})),
        )
        for name in required_params(parameters)
    )


def value_kinds(query: str) -> frozenset[str]:
    """The kinds of values visible in a query text."""
    found = {
        kind
        for kind, pattern in (
            ("number", _NUMBER),
            ("date", _DATE),
            ("time", _TIME),
            ("email", _EMAIL),
            ("url", _URL),
            ("ip", _IP),
            ("phone", _PHONE),
            ("quoted", _QUOTED),
            ("id", _ID_TOKEN),
            ("proper", _PROPER),
            ("boolean", _BOOLEAN),
            ("words", _WORD),
        )
        if pattern.search(query)
    }
    return frozenset(found)


# Which visible value kinds can fill a parameter of each kind.
_FILLS: dict[str, frozenset[str]] = {
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


def query_evidence(
    query: str, query_stems: Iterable[str], context: Mapping[str, Any] | None
) -> QueryEvidence:
    """Analyse a query once for the rule check."""
    keys = frozenset(context_key(str(k)) for k in (context or {}))
    return QueryEvidence(frozenset(query_stems), value_kinds(query[:4000]), keys)


def supplies(rule: ParamRule, evidence: QueryEvidence) -> bool:
    """Whether the context or the query can supply this required parameter."""
    if rule.key in evidence.context_keys or rule.cues & evidence.stems:
        return True
    if any(value <= evidence.stems for value in rule.values):
        return True
    return bool(_FILLS.get(rule.kind, frozenset()) & evidence.kinds)


def missing_required(rules: Sequence[ParamRule], evidence: QueryEvidence) -> tuple[str, ...]:
    """Names of the required parameters that nothing supplies, in schema order."""
    return tuple(rule.name for rule in rules if not supplies(rule, evidence))


def penalty(missing: Sequence[str], per_param: float, max_params: int) -> float:
    """The (negative) score part: ``-per_param`` for each missing parameter, up to a cap."""
    return -per_param * min(len(missing), max_params)
