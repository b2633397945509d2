"""Is this tool call valid? The exact JSON Schema errors, each with what to do about it."""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator
from referencing.exceptions import Unresolvable

from registry.card import ErrorEntry, ToolCard
from registry.json_schema import (
    MAX_REF_STEPS,
    VALIDATOR_CACHE_SIZE,
    SchemaError,
    TooCostly,
    additional_keys,
    iter_errors,
    json_pointer,
    make_validator,
)

MAX_ARGUMENT_DEPTH = 64  # nested objects and arrays in a call's arguments
SIMILARITY_CUTOFF = 0.6
VALUE_CACHE_SIZE = 16_384  # (parameter schema, scalar value) verdicts the router remembers
REMEMBERED_STRING_CHARS = 256  # longer strings are checked every time
MAX_REASON_CHARS = 300  # of the reason a context value is refused
_TOO_COSTLY = (
    f"checking these arguments against the tool's recursive schema follows more than "
    f"{MAX_REF_STEPS} $refs; send a smaller value"
)
_ENUM_SHOWN = 20  # enum values listed in a suggestion
_DESCRIPTION_SHOWN = 200  # characters of a parameter's description in a suggestion

FORMAT_SHAPES = {
    "date": "YYYY-MM-DD, e.g. 2025-03-14",
    "date-time": "RFC 3339, e.g. 2025-03-14T09:30:00Z",
    "time": "HH:MM:SS with a zone, e.g. 09:30:00Z",
    "email": "an address like name@example.com",
    "idn-email": "an address like name@example.com",
    "uri": "an absolute URI with a scheme, e.g. https://example.com/path",
    "uuid": "8-4-4-4-12 hex digits, e.g. 123e4567-e89b-12d3-a456-426614174000",
    "ipv4": "a dotted quad, e.g. 192.0.2.1",
    "ipv6": "e.g. 2001:db8::1",
    "idn-hostname": "a host name, e.g. example.com",
    "regex": "a regular expression RE2 accepts (no look-around or backreferences)",
}

# Error-table codes, after normalising (upper case, letters and digits only), by problem kind.
_GENERIC_CODES = (
    "INVALIDARGUMENT", "INVALIDARGUMENTS", "INVALIDPARAMETER", "INVALIDPARAMETERS",
    "INVALIDPARAMS", "INVALIDINPUT", "VALIDATIONERROR", "BADREQUEST",
)  # fmt: skip
_KIND_CODES = {
    "required": ("MISSINGPARAMETER", "MISSINGARGUMENT", "MISSINGREQUIREDPARAMETER", "MISSINGFIELD"),
    "additionalProperties": ("UNKNOWNPARAMETER", "UNKNOWNARGUMENT", "UNEXPECTEDPARAMETER"),
    "enum": ("INVALIDENUM", "INVALIDVALUE"),
    "type": ("INVALIDTYPE",),
    "format": ("INVALIDFORMAT",),
}
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # ASCII only: CJK prose is no name


@dataclass(frozen=True)
class CallError:
    """One problem with a call: where in the arguments, jsonschema's message, what to do."""

    path: str  # JSON Pointer into the arguments, "" for the root, e.g. "/items/0/qty"
    message: str
    suggestion: str | None = None


def validate_arguments(card: ToolCard, arguments: Any) -> list[CallError]:
    """Every way ``arguments`` break the card's parameter schema, sorted by path."""
    if _deeper_than(arguments, MAX_ARGUMENT_DEPTH):
        return [CallError("", f"the arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels")]
    validator = make_validator(card.parameters)
    try:
        errors = iter_errors(validator, arguments)
    except TooCostly:
        return [CallError("", _TOO_COSTLY)]
    found = [
        (_sort_key(error.absolute_path), error.message, _call_error(card, error, arguments))
        for error in errors
    ]
    return [error for *_, error in sorted(found, key=lambda item: item[:2])]


def value_problem(schema: str, value: Any) -> str | None:
    """Why ``value`` breaks one parameter's JSON Schema (given as compact JSON), or ``None``
    when it satisfies it: the router's check of a context or step value (app/routing/values.py,
    ``ValueCheck``). A schema that cannot be checked on its own (a ``$ref`` outside its
    ``$defs``) accepts every value: the router cannot say the value is wrong.

    A scalar's verdict is remembered (a string's up to 256 characters): steps repeat their
    words, and tools share parameters.
    """
    if value is None or isinstance(value, int | float) or _short(value):
        return _scalar_problem(schema, value)
    return _problem(schema, value)


def _short(value: Any) -> bool:
    """A string short enough to remember (a long one would make the cache a memory sink)."""
    return isinstance(value, str) and len(value) <= REMEMBERED_STRING_CHARS


@functools.lru_cache(maxsize=VALUE_CACHE_SIZE, typed=True)  # typed: True is not 1
def _scalar_problem(schema: str, value: str | float | None) -> str | None:
    return _problem(schema, value)


def _problem(schema: str, value: Any) -> str | None:
    if _deeper_than(value, MAX_ARGUMENT_DEPTH):
        return f"the value nests deeper than {MAX_ARGUMENT_DEPTH} levels"
    validator = _parameter_validator(schema)
    if validator is None:
        return None
    try:
        error = best_match(iter_errors(validator, value))
    except Unresolvable:
        return None
    except TooCostly:
        return _TOO_COSTLY
    if error is None:
        return None
    reason = str(error.message)  # it quotes the value: a long one is cut
    return reason if len(reason) <= MAX_REASON_CHARS else reason[: MAX_REASON_CHARS - 1] + "…"


@functools.lru_cache(maxsize=VALIDATOR_CACHE_SIZE)
def _parameter_validator(schema: str) -> Validator | None:
    """The validator of one parameter's schema text (cached by the text, which the router
    shares between tools with the same parameter)."""
    try:
        return make_validator(json.loads(schema))
    except (SchemaError, ValueError):
        return None


def _deeper_than(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > limit:
                return True
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)
    return False


def _sort_key(path: Iterable[str | int]) -> tuple[tuple[int, int, str], ...]:
    """Array indexes in numeric order, keys in text order."""
    return tuple((0, t, "") if isinstance(t, int) else (1, 0, str(t)) for t in path)


def _call_error(card: ToolCard, error: Any, arguments: Any) -> CallError:
    hint = _HINTS.get(error.validator, _hint_example)(error)
    if error.validator == "type" and not error.path:
        hint = _hint_encoded(arguments) or hint
    table = _table_hint(card, error.validator, _params(error))
    suggestion = "; ".join(part for part in (hint, table) if part) or None
    return CallError(json_pointer(error.absolute_path), error.message, suggestion)


# --- what the schema says to do --------------------------------------------------------------


def _hint_required(error: Any) -> str | None:
    name = _missing(error)
    properties = error.schema.get("properties", {})
    spec = properties.get(name) if isinstance(properties, dict) else None
    if name is None or not isinstance(spec, dict):
        return None if name is None else f"add {name!r}"
    hint = f"add {name!r}" + (f" ({_types(spec['type'])})" if "type" in spec else "")
    if isinstance(spec.get("description"), str):
        hint += f": {spec['description'].strip().rstrip('.')}"
    example = _example(spec)
    return hint + (f" (example: {example})" if example else "")


def _missing(error: Any) -> str | None:
    """The property a "required" error is about (jsonschema makes one error per property)."""
    for name in error.validator_value:
        if error.message == f"{name!r} is a required property":
            return str(name)
    return None


def _hint_enum(error: Any) -> str:
    values = list(error.validator_value)
    shown = ", ".join(json.dumps(v, ensure_ascii=False) for v in values[:_ENUM_SHOWN])
    hint = f"use one of: {shown}" + (", …" if len(values) > _ENUM_SHOWN else "")
    if isinstance(error.instance, str):
        close = did_you_mean(error.instance, [v for v in values if isinstance(v, str)], n=1)
        hint += f"; did you mean {json.dumps(close[0], ensure_ascii=False)}?" if close else ""
    return hint


def _hint_const(error: Any) -> str:
    return f"use {json.dumps(error.validator_value, ensure_ascii=False)}"


def _hint_type(error: Any) -> str:
    example = _example(error.schema)
    return f"expected {_types(error.validator_value)}" + (f", e.g. {example}" if example else "")


def _hint_extra(error: Any) -> str | None:
    if not isinstance(error.instance, dict):
        return None
    allowed = [str(name) for name in error.schema.get("properties", {})]
    extras = sorted(additional_keys(error.instance, error.schema))
    hints: list[str] = []
    for extra in extras:
        close = did_you_mean(extra, allowed, n=1)
        instead = f" instead of {extra!r}" if len(extras) > 1 else ""
        hints.extend(f"did you mean {c!r}{instead}?" for c in close)
    if hints:
        return " ".join(hints)
    return f"remove {', '.join(map(repr, extras))}" + (
        f"; allowed: {', '.join(allowed)}" if allowed else ""
    )


def _hint_format(error: Any) -> str | None:
    shape = FORMAT_SHAPES.get(error.validator_value)
    return f"expected {error.validator_value}: {shape}" if shape else None


def _hint_alternatives(error: Any) -> str | None:
    """For anyOf/oneOf: the message of the alternative that came closest."""
    if not error.context:
        return None
    # Prefer an alternative of the instance's own type, then the one that got deepest.
    closest = min(error.context, key=lambda e: (e.validator == "type", -len(e.absolute_path)))
    return f"closest alternative: {closest.message}"


def _hint_example(error: Any) -> str | None:
    """The value's example or default; for a pattern, else what its schema says of it (a
    description such as "e.g. AAPL" is often the only hint of what a pattern wants)."""
    if not isinstance(error.schema, dict):
        return None
    example = _example(error.schema)
    if example:
        return f"e.g. {example}"
    description = error.schema.get("description")
    if error.validator != "pattern" or not isinstance(description, str):
        return None
    line = " ".join(description.split())
    return (
        line[: _DESCRIPTION_SHOWN - 1] + "…" if len(line) > _DESCRIPTION_SHOWN else line
    ) or None


def _hint_encoded(arguments: Any) -> str | None:
    """OpenAI hands arguments over as a JSON string; agents sometimes pass it on as is."""
    if not isinstance(arguments, str):
        return None
    try:
        decoded = json.loads(arguments)
    except ValueError:
        return None
    return (
        "send the arguments as a JSON object, not a JSON-encoded string"
        if isinstance(decoded, dict)
        else None
    )


def _example(schema: dict[str, Any]) -> str | None:
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return json.dumps(examples[0], ensure_ascii=False)
    return json.dumps(schema["default"], ensure_ascii=False) if "default" in schema else None


def _types(value: Any) -> str:
    return " or ".join(value) if isinstance(value, list) else str(value)


_HINTS: dict[str, Callable[[Any], str | None]] = {
    "required": _hint_required,
    "enum": _hint_enum,
    "const": _hint_const,
    "type": _hint_type,
    "additionalProperties": _hint_extra,
    "unevaluatedProperties": _hint_extra,
    "format": _hint_format,
    "anyOf": _hint_alternatives,
    "oneOf": _hint_alternatives,
}


# --- what the card's error table says to do --------------------------------------------------


def _params(error: Any) -> list[str]:
    """The parameter names a problem is about: the innermost key, then the top-level one."""
    keys = [str(t) for t in error.absolute_path if isinstance(t, str)]
    if error.validator == "required":
        keys.append(_missing(error) or "")
    elif error.validator == "additionalProperties" and isinstance(error.instance, dict):
        keys.extend(additional_keys(error.instance, error.schema))
    return list(dict.fromkeys(k for k in (keys[-1:] + keys[:1] if keys else []) if k))


def _code_key(code: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "", code).upper()


def _table_hint(card: ToolCard, kind: str, params: list[str]) -> str | None:
    """The suggestion of the error-table row about this problem's argument, or none: a row
    whose code names the argument (``INVALID_UNITS``, ``MISSING_CITY``); else a row of the
    problem's kind or a generic one (``INVALID_ARGUMENT``) whose text names the argument, or
    names no argument of the tool at all. A generic row about another argument ("units is
    not metric or imperial") says nothing of this one."""
    table: dict[str, ErrorEntry] = {}
    for row in card.errors:
        table.setdefault(_code_key(row.code), row)
    prefixes = ("MISSING", "INVALID") if kind == "required" else ("INVALID",)
    specific = [f"{prefix}{_code_key(p)}" for p in params for prefix in prefixes]
    general = (*_KIND_CODES.get(kind, ()), *_GENERIC_CODES)
    for code in (*specific, *general):
        entry = table.get(code)
        if entry is None or not entry.suggestion:
            continue
        if code in specific or _speaks_of(entry, params, card):
            return f"{entry.code}: {entry.suggestion}"
    return None


def _speaks_of(entry: ErrorEntry, params: list[str], card: ToolCard) -> bool:
    """Whether a general row is about ``params``: its text names one of them, or names no
    argument of the tool (then it is about any argument)."""
    words = {w.casefold() for w in _IDENTIFIER.findall(f"{entry.meaning} {entry.suggestion}")}
    named = words & _argument_names(json.dumps(card.parameters, sort_keys=True))
    return not named or bool(named & {p.casefold() for p in params})


@functools.lru_cache(maxsize=1024)
def _argument_names(parameters: str) -> frozenset[str]:
    """Every property name of a parameter schema (given as JSON), at any depth, folded."""
    names: set[str] = set()
    stack: list[Any] = [json.loads(parameters)]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            properties = node.get("properties")
            if isinstance(properties, dict):
                names.update(str(name).casefold() for name in properties)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return frozenset(names)


# --- unknown tool names ----------------------------------------------------------------------


def did_you_mean(name: str, names: Iterable[str], n: int = 3) -> list[str]:
    """The real names closest to ``name``: the same ignoring case, the same ignoring case and
    separators (get_order, getOrder, get-order) — when there are such, only they — else by
    similarity of letters and of words."""
    candidates = list(dict.fromkeys(names))
    folded, squashed = name.casefold(), _squash(name)
    exact = sorted((c for c in candidates if c.casefold() == folded), key=lambda c: c != name)
    same = [c for c in candidates if c.casefold() != folded and _squash(c) == squashed]
    if exact or same:  # the name meant, spelt another way: no need for guesses beside it
        return [*exact, *same][: max(n, 0)]
    query = _Query(name)
    scored = [(-score, c) for c in candidates if (score := query.score(c)) > 0]
    return [c for _, c in sorted(scored)][: max(n, 0)]


class _Query:
    """A name to compare others with: difflib ratio on letters, in order and with words sorted
    (so weather_get_current meets get_current_weather), plus the share of words in common."""

    def __init__(self, name: str) -> None:
        self.squashed = _squash(name)
        self.words = _words(name)
        self.matchers = [
            difflib.SequenceMatcher(b=key, autojunk=False)
            for key in (self.squashed, _sorted_words(name))
        ]

    def score(self, candidate: str) -> float:
        """0 when not similar enough; otherwise higher is closer (at most 2)."""
        squashed = _squash(candidate)
        if squashed == self.squashed:
            return 0.0  # exact or same: listed first, not scored
        overlap = _overlap(self.words, _words(candidate))
        keys = (squashed, _sorted_words(candidate))
        letters = max(
            _ratio(m, key, full=overlap >= 0.5) for m, key in zip(self.matchers, keys, strict=True)
        )
        return letters + overlap if letters >= SIMILARITY_CUTOFF or overlap >= 0.5 else 0.0


def _squash(name: str) -> str:
    """get_order, getOrder, get-order and GET.ORDER all squash to "getorder"."""
    return "".join(ch for ch in name.casefold() if ch.isalnum())


def _words(name: str) -> frozenset[str]:
    return frozenset(word.lower() for word in _WORD.findall(name))


def _sorted_words(name: str) -> str:
    return "".join(sorted(_words(name))) or _squash(name)


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _ratio(matcher: difflib.SequenceMatcher[str], key: str, *, full: bool) -> float:
    matcher.set_seq1(key)
    if not full and (
        matcher.real_quick_ratio() < SIMILARITY_CUTOFF or matcher.quick_ratio() < SIMILARITY_CUTOFF
    ):
        return 0.0  # cannot reach the cutoff: skip the quadratic part
    return matcher.ratio()
