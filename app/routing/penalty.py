"""Stage 3, the rule check: which required parameters have no value in the step or the context.

A required parameter *has a value* when one of these holds:

1. the caller's ``context`` has it (key compared without case, ``_``, ``-`` or ``.``) and the
   value satisfies the parameter's own JSON Schema (type, pattern, enum, format, bounds); a value
   that breaks it does not count, and the tool's verdict says which and why
   (``invalid_context``);
2. the step contains one of its enum values or listed examples (``examples``, or the list after
   "e.g." / "such as" / "for example" in its description);
3. the step shows a value of its kind (``values.py``) that, read as the parameter's JSON type,
   satisfies its schema: ``o123`` is an id-like token but no value of ``^o[0-9]{6,}$``; for a
   string with a selective pattern (one that rejects ordinary words) any word of the step that
   satisfies it is a value (``es`` for ``^[a-z]{2}$``). Dates, times, phone numbers and
   language names are written in notations the agent converts ("tomorrow", "Spanish"), so for
   them the detector's shape is the check (``values.NOTATION_SHAPES``);
4. free text (``values.value_kind``: ``text``, ``message``, ``query``, ``body``… with no
   pattern, enum, const or format): the step holds content beyond asking for the tool — a
   quoted string, or a word that is neither in the tool's name, nor in a name (or synonym) of
   one of its parameters, nor a generic request word ("translate this text to Spanish" holds no
   text, "how do I return an item" is a query);
5. a plain string (no pattern, enum, const or format): the step has a word the tool's own card
   does not contain — the likely value ("…the mass transfer rate for *ethanol*").

A mention of a parameter (a stem of its name, minus generic words such as ``id`` or ``type``,
or of a synonym: ``location`` ← city, where…) is not a value: ``missing_required`` lists the
parameter. Whether a mention softens its ranking penalty is a separate choice, measured
(``RouterConfig.mention_softening``, docs/ROUTING.md).

Everything about a tool is compiled once, at index build time (:func:`compile_rules`); a step
is analysed once (:func:`step_offer`); values are checked against schemas only for the few
tools the check reaches.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from app.routing.text import STOPWORDS, analyse, required_params, schema_properties, stems, words
from app.routing.values import (
    FILLS,
    NOTATION_SHAPES,
    StepValues,
    ValueCheck,
    constrained,
    example_values,
    json_type,
    selective,
    typed,
    value_kind,
    word_set,
)

# Name parts that say nothing about what the value is ("user_id" is mentioned by "user").
_GENERIC = word_set(
    "id ids name type value data info information number num no code key list string text "
    "str param input field detail details"
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
# Words that ask for a tool rather than carry content for it (free text, rule 4).
_REQUEST_WORDS = stems(
    "please help want need like can could would show tell give find get make use let try "
    "write create new compose draft run look see check open start add set put post submit "
    "raise file go thing something"
)


@dataclass(frozen=True, slots=True)
class ParamRule:
    """One required parameter, compiled: what in a step or the context would be its value.

    ``schema`` is the parameter's JSON Schema as compact JSON (with the card's ``$schema`` and,
    if it refers to them, its ``$defs``): what a context value is checked against.
    ``step_schema`` is what a value read from the step, read as ``json_type``, is checked
    against: the schema, or an array's items.
    """

    name: str
    key: str
    cues: frozenset[str]
    values: tuple[frozenset[str], ...]
    kind: str
    json_type: str
    schema: str | None
    step_schema: str | None
    plain: bool  # a string with no pattern, enum, const or format
    request_words: frozenset[str]  # free text: the words that only ask for the tool (rule 4)


@dataclass(frozen=True, slots=True)
class StepOffer:
    """What a step offers: its stems, its values of each shape, and the caller's context."""

    stems: frozenset[str]
    values: StepValues
    context: Mapping[str, Any]
    context_keys: Mapping[str, str]  # context_key(key) → the key as the caller wrote it

    def context_value(self, rule: ParamRule) -> tuple[bool, Any]:
        """(whether the context has this parameter, its value): its own name first, else a
        key that differs only in case or separators."""
        if rule.name in self.context:
            return True, self.context[rule.name]
        key = self.context_keys.get(rule.key)
        return (False, None) if key is None else (True, self.context[key])


@dataclass(frozen=True, slots=True)
class ParameterCheck:
    """Stage 3 for one tool: the required parameters with no value (schema order), those of
    them the step mentions by name, and each context value that breaks its parameter's schema
    as ``(parameter, reason)``."""

    missing: tuple[str, ...] = ()
    mentioned: tuple[str, ...] = ()
    invalid_context: tuple[tuple[str, str], ...] = ()


NOTHING_MISSING = ParameterCheck()


def context_key(name: str) -> str:
    """A parameter or context key compared without case, ``_``, ``-``, ``.`` or spaces."""
    return re.sub(r"[\W_]+", "", name).lower()


@lru_cache(maxsize=65536)
def name_cues(name: str) -> frozenset[str]:
    """Stems that mention the parameter: its specific name parts and their synonyms."""
    parts = [w for w in words(name) if w not in _GENERIC and w not in STOPWORDS]
    cues = set(analyse(" ".join(parts)))
    for stem in list(cues):
        cues |= stems(_SYNONYMS.get(stem, ""))
    return frozenset(cues)


_REF = re.compile(r'"\$ref":"([^"]*)"')
_DEFINITIONS = ("#/$defs/", "#/definitions/")


def schema_json(schema: Mapping[str, Any], root: Mapping[str, Any] | None) -> str | None:
    """``schema`` as compact JSON, standing alone: with the card's ``$schema`` (its dialect)
    and, when it refers to them, its ``$defs``/``definitions``; one shared string per distinct
    schema. ``None`` for a schema that is not plain JSON, or that refers to the card's root
    or to its parts outside the definitions (a recursive ``{"$ref": "#"}``: standing alone it
    would mean this schema); then values are not checked."""
    root = root if isinstance(root, Mapping) else {}
    extra = {key: root[key] for key in ("$schema",) if key in root}
    try:
        text = json.dumps(schema, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        if '"$ref"' in text:
            extra |= {key: root[key] for key in ("$defs", "definitions") if key in root}
        if extra:
            whole = {**schema, **extra}
            text = json.dumps(whole, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return None
    if not all(ref.startswith(_DEFINITIONS) for ref in _REF.findall(text)):
        return None
    return sys.intern(text)


def compile_rule(
    name: str, schema: Mapping[str, Any], root: Mapping[str, Any] | None, tool: str = ""
) -> ParamRule:
    """One required parameter's rule (``root``: the card's parameters; ``tool``: its name)."""
    props = schema_properties(root)
    items = schema.get("items") if json_type(schema) == "array" else None
    value_schema = items if isinstance(items, Mapping) else schema
    kind = value_kind(name, schema)
    whole = schema_json(schema, root)
    step = whole if value_schema is schema else schema_json(value_schema, root)
    asking: frozenset[str] = frozenset()
    if kind == "text":
        named = " ".join(words(" ".join([tool, *props])))
        asking = stems(named).union(*(name_cues(other) for other in props)) | _REQUEST_WORDS
    return ParamRule(
        name=name,
        key=context_key(name),
        cues=name_cues(name),
        values=tuple(dict.fromkeys(example_values(schema) + example_values(value_schema))),
        kind=kind,
        json_type=json_type(value_schema),
        schema=whole,
        step_schema=step,
        plain=kind in ("string", "text") and not constrained(value_schema),
        request_words=asking,
    )


def compile_rules(parameters: Mapping[str, Any] | None, tool: str = "") -> tuple[ParamRule, ...]:
    """The rules of every required parameter of one schema (done once, at build time)."""
    props = schema_properties(parameters)
    return tuple(
        compile_rule(name, props.get(name, {}), parameters, tool)
        for name in required_params(parameters)
    )


def step_offer(
    query: str, query_stems: Iterable[str], context: Mapping[str, Any] | None
) -> StepOffer:
    """Analyse a step once for the rule check (``query``: the part of the step that is read)."""
    context = context or {}
    keys: dict[str, str] = {}
    for key in context:
        keys.setdefault(context_key(str(key)), key)
    return StepOffer(frozenset(query_stems), StepValues(query), context, keys)


def _step_value(rule: ParamRule, offer: StepOffer, check: ValueCheck | None) -> bool:
    """Whether the step shows a value of the parameter's kind that satisfies its schema."""
    shapes = FILLS.get(rule.kind, frozenset())
    if rule.kind == "id" and rule.json_type in ("integer", "number"):
        shapes |= {"number"}
    schema = rule.step_schema
    if (
        check is not None
        and schema is not None
        and rule.kind in ("string", "id", "language")
        and '"pattern"' in schema
        and selective(schema, check)
    ):
        shapes |= {"token"}
    for shape in sorted(shapes):
        for found in offer.values.found(shape):
            value = typed(found, rule.json_type)
            if value is None:
                continue
            if shape in NOTATION_SHAPES or check is None or schema is None:
                return True
            if check(schema, value) is None:
                return True
    return False


def _free_text(rule: ParamRule, offer: StepOffer) -> bool:
    """Rule 4: the step holds content beyond asking for the tool."""
    return bool(offer.values.found("quoted") or offer.stems - rule.request_words)


def value_of(
    rule: ParamRule,
    offer: StepOffer,
    check: ValueCheck | None,
    unexplained: Callable[[], bool],
) -> tuple[bool, str | None]:
    """(whether the parameter has a value, why its context value breaks its schema if it
    does). ``unexplained()``: whether the step has a word the tool's card does not contain."""
    problem = None
    found, value = offer.context_value(rule)
    if found:
        problem = None if check is None or rule.schema is None else check(rule.schema, value)
        if problem is None:
            return True, None
    if any(listed <= offer.stems for listed in rule.values):
        return True, problem
    if _step_value(rule, offer, check):
        return True, problem
    if rule.kind == "text" and _free_text(rule, offer):
        return True, problem
    if rule.kind == "string" and rule.plain and unexplained():
        return True, problem
    return False, problem


def check_parameters(
    rules: Sequence[ParamRule],
    offer: StepOffer,
    check: ValueCheck | None = None,
    unexplained: Callable[[], bool] = lambda: False,
) -> ParameterCheck:
    """What stage 3 finds for one tool's required parameters."""
    if not rules:
        return NOTHING_MISSING
    missing: list[str] = []
    mentioned: list[str] = []
    invalid: list[tuple[str, str]] = []
    for rule in rules:
        has_value, problem = value_of(rule, offer, check, unexplained)
        if problem is not None:
            invalid.append((rule.name, problem))
        if not has_value:
            missing.append(rule.name)
            if rule.cues & offer.stems:
                mentioned.append(rule.name)
    if not missing and not invalid:
        return NOTHING_MISSING
    return ParameterCheck(tuple(missing), tuple(mentioned), tuple(invalid))


def missing_required(
    rules: Sequence[ParamRule],
    offer: StepOffer,
    check: ValueCheck | None = None,
    unexplained: bool = False,
) -> tuple[str, ...]:
    """Names of the required parameters with no value, in schema order."""
    return check_parameters(rules, offer, check, lambda: unexplained).missing


def penalty(
    missing: Sequence[str],
    per_param: float,
    max_params: int,
    mentioned: Collection[str] = (),
    softening: float = 0.0,
) -> float:
    """The (negative) score part: ``-per_param`` for each missing parameter, a mentioned one
    ``-per_param · (1 - softening)``; the ``max_params`` largest count."""
    costs = sorted(
        (per_param * (1.0 - softening) if name in mentioned else per_param for name in missing),
        reverse=True,
    )
    return -sum(costs[:max_params])
