"""Stage 3, the rule check: which required parameters can neither the query nor the context supply.

A required parameter counts as *suppliable* when any one of these holds:

1. its name is a key of the caller's ``context`` (compared without case, ``_`` or ``-``);
2. the query mentions it: a stem of its name (minus generic words such as ``id`` or ``type``)
   or of a synonym of it;
3. the query contains one of its enum values or one of the examples its description lists
   after "e.g." / "such as" / "for example";
4. the query shows a value of its kind: a number for numeric parameters, a date or time for
   date/time parameters, an e-mail address, a URL, an IP address, a phone number, an id-like
   token for ``*_id`` parameters, a quoted or capitalised string or a query word that the
   tool's own card does not contain for other string parameters;
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

from app.routing.text import STOPWORDS, analyse, required_params, schema_properties, stems, words
from app.routing.values import FILLS, VisibleKinds, example_values, value_kind, word_set

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
    kinds: VisibleKinds
    context_keys: frozenset[str]


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


def query_evidence(
    query: str, query_stems: Iterable[str], context: Mapping[str, Any] | None
) -> QueryEvidence:
    """Analyse a query once for the rule check."""
    keys = frozenset(context_key(str(k)) for k in (context or {}))
    return QueryEvidence(frozenset(query_stems), VisibleKinds(query[:4000]), keys)


def supplies(rule: ParamRule, evidence: QueryEvidence, unexplained: bool = False) -> bool:
    """Whether the context or the query can supply this required parameter.

    ``unexplained``: the query has a word the tool's own card does not contain — the likely
    value of a plain string parameter ("…the mass transfer rate for *ethanol*").
    """
    if rule.key in evidence.context_keys or rule.cues & evidence.stems:
        return True
    if any(value <= evidence.stems for value in rule.values):
        return True
    if unexplained and rule.kind == "string":
        return True
    return evidence.kinds.any_of(FILLS.get(rule.kind, frozenset()))


def missing_required(
    rules: Sequence[ParamRule], evidence: QueryEvidence, unexplained: bool = False
) -> tuple[str, ...]:
    """Names of the required parameters that nothing supplies, in schema order."""
    return tuple(rule.name for rule in rules if not supplies(rule, evidence, unexplained))


def penalty(missing: Sequence[str], per_param: float, max_params: int) -> float:
    """The (negative) score part: ``-per_param`` for each missing parameter, up to a cap."""
    return -per_param * min(len(missing), max_params)
