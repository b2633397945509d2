"""The lint of a card as it is written: flaws the model and the router trip over, each a
warning ``{code, message}`` (the write still lands). Pure: the card, and the names of the
look-alikes that stand close to it (the caller finds them).

The dimensions follow two studies of tool descriptions: purpose, usage guidelines,
limitations, parameter explanation (arXiv 2602.14878, "97 % of 856 MCP tools have a flaw")
and functional accuracy of the parameters and errors (arXiv 2602.18914). docs/API.md lists
each code.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from registry.card import ToolCard

# A purpose needs at least this many content words the name does not already say.
MIN_PURPOSE_WORDS = 3
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    {"a", "an", "the", "of", "to", "for", "in", "on", "and", "or", "with", "by", "from"}
    | {"this", "that", "it", "its", "is", "are", "be", "use", "used", "tool", "api"}
    | {"call", "calls", "function", "returns", "return", "get", "set"}
)
# A "when not to use" line: how cards usually say it.
_NOT_FOR = re.compile(
    r"\b(not for|not to be used|do not use|don't use|never use|instead|rather than|"
    r"use \S+ for|not when|doesn't|does not)\b",
    re.IGNORECASE,
)
# Allowed values listed in prose: "one of a, b, c", "either a or b", "a | b | c", "values: …".
_ENUM_PROSE = re.compile(
    r"\b(one of|either|possible values|allowed values|valid values|must be)\b"
    r"|['\"`]?\w+['\"`]?\s*\|\s*['\"`]?\w+['\"`]?\s*\|",
    re.IGNORECASE,
)


_TYPED = ("type", "enum", "const", "$ref", "anyOf", "oneOf", "allOf")


@dataclass(frozen=True)
class LintWarning:
    code: str
    message: str
    dimension: str  # the papers' name for it (docs/API.md)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def purpose_missing(card: ToolCard) -> list[LintWarning]:
    """The card says no more than its name: fewer than MIN_PURPOSE_WORDS new content words."""
    name_words = set(_words(re.sub(r"([a-z])([A-Z])", r"\1 \2", card.name)))
    said = {w for w in _words(f"{card.summary} {card.description}") if w not in _STOP}
    if len(said - name_words) >= MIN_PURPOSE_WORDS:
        return []
    return [
        LintWarning(
            "purpose_missing",
            "the summary and description say little beyond the name: say what the tool does, "
            "on what, and what it gives back",
            "purpose",
        )
    ]


def no_when_not(card: ToolCard, lookalikes: Sequence[str]) -> list[LintWarning]:
    """A look-alike stands close and the card has no line saying when not to use it."""
    if not lookalikes:
        return []
    text = f"{card.summary} {card.description}"
    if _NOT_FOR.search(text) or any(other.lower() in text.lower() for other in lookalikes):
        return []
    names = ", ".join(lookalikes[:3])
    return [
        LintWarning(
            "no_when_not",
            f"look-alike tools stand close ({names}) and the card never says when not to use "
            f"it: add a line such as 'Not for …: use {lookalikes[0]}.'",
            "usage guidelines / limitations",
        )
    ]


def _properties(card: ToolCard) -> dict[str, Any]:
    props = card.parameters.get("properties")
    return props if isinstance(props, dict) else {}


def param_undocumented(card: ToolCard) -> list[LintWarning]:
    """Required parameters without a description or without a type."""
    props, found = _properties(card), []
    required = card.parameters.get("required")
    for name in required if isinstance(required, list) else []:
        schema = props.get(name)
        schema = schema if isinstance(schema, dict) else {}
        lacks = [
            what
            for what, present in (
                ("description", bool(str(schema.get("description", "")).strip())),
                ("type", any(k in schema for k in _TYPED)),
            )
            if not present
        ]
        if lacks:
            found.append(
                LintWarning(
                    "param_undocumented",
                    f"required parameter {name!r} has no {' and no '.join(lacks)}",
                    "parameter explanation",
                )
            )
    return found


def enum_in_prose(card: ToolCard) -> list[LintWarning]:
    """A string parameter whose description lists its allowed values but whose schema has
    no ``enum``: the validator cannot check them, the model reads them as a suggestion."""
    found = []
    for name, schema in _properties(card).items():
        if not isinstance(schema, dict) or "enum" in schema or "const" in schema:
            continue
        if schema.get("type") not in (None, "string"):
            continue
        if _ENUM_PROSE.search(str(schema.get("description", ""))):
            found.append(
                LintWarning(
                    "enum_in_prose",
                    f"parameter {name!r} lists its values in prose: put them in an 'enum'",
                    "functional accuracy (parameters)",
                )
            )
    return found


def error_no_suggestion(card: ToolCard) -> list[LintWarning]:
    """Error-table rows that say what went wrong but not what an agent should do next."""
    bare = [entry.code for entry in card.errors if not (entry.suggestion or "").strip()]
    if not bare:
        return []
    return [
        LintWarning(
            "error_no_suggestion",
            f"errors {', '.join(bare[:5])} have no suggestion: say what an agent should do next",
            "functional accuracy (errors)",
        )
    ]


def lint(card: ToolCard, lookalikes: Sequence[str] = ()) -> list[LintWarning]:
    """Every warning of the card, in a fixed order; ``lookalikes``: the names of the tools
    whose cards stand close to it, closest first."""
    return [
        *purpose_missing(card),
        *no_when_not(card, lookalikes),
        *param_undocumented(card),
        *enum_in_prose(card),
        *error_no_suggestion(card),
    ]
