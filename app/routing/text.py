"""Text analysis shared by every stage: identifier splitting, tokens, stems, the embedded text.

One analyser serves tool cards and queries alike, so both sides meet in the same token space:

* identifiers are split on ``_ . - :`` and on camelCase / digit boundaries
  (``getHTTPStatus_v2`` → ``get http status v 2``);
* English words are lower-cased, stop words dropped (NLTK list, as shipped by bm25s) and
  Snowball-stemmed (Porter 2001, PyStemmer);
* runs of CJK characters become overlapping character bigrams (a lone character stays a
  unigram), the standard analyser for unsegmented Chinese/Japanese/Korean (Lucene CJKAnalyzer).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

import Stemmer
from bm25s.stopwords import STOPWORDS_EN_PLUS

from app.routing.types import ToolDoc

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+", re.UNICODE)
_CAMEL_LOWER_UPPER = re.compile(r"(?<=[a-z])(?=[A-Z])")
_CAMEL_ACRONYM = re.compile(r"(?<=[A-Z])(?=[A-Z][a-z])")
_LETTER_DIGIT = re.compile(r"(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])")
_IS_CJK = re.compile(rf"[{_CJK}]")
STOPWORDS: frozenset[str] = frozenset(STOPWORDS_EN_PLUS)
_MAX_QUERY_CHARS = 4000


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def split_identifier(text: str) -> str:
    """Break camelCase, acronym and letter/digit boundaries with spaces (separators stay)."""
    if not text.islower():  # (a lower-case text has no camelCase or acronym to split)
        text = _CAMEL_LOWER_UPPER.sub(" ", text)
        text = _CAMEL_ACRONYM.sub(" ", text)
    return _LETTER_DIGIT.sub(" ", text)


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a CJK run; a one-character run is its own token."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def words(text: str) -> list[str]:
    """Lower-cased word tokens after identifier splitting; CJK runs become bigrams."""
    out: list[str] = []
    for piece in _TOKEN.findall(split_identifier(text)):
        if piece[0] >= "\u3040" and _IS_CJK.match(piece):  # (no CJK below U+3040)
            out.extend(cjk_bigrams(piece))
        else:
            out.append(piece.lower())
    return out


def analyse(text: str) -> list[str]:
    """The index/query tokens of ``text``: words minus stop words, stemmed (CJK kept as is)."""
    return stem_words(kept_words(text))


def kept_words(text: str) -> list[str]:
    """The words of ``text`` that ``analyse`` stems: stop words left out."""
    return [w for w in words(text[:_MAX_QUERY_CHARS]) if w not in STOPWORDS]


def stem_words(kept: list[str]) -> list[str]:
    """Each word's stem (CJK kept as is)."""
    return _stemmer().stemWords(kept) if kept else []


def stems(text: str) -> frozenset[str]:
    """The distinct analysed tokens of ``text``."""
    return frozenset(analyse(text))


def schema_properties(parameters: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    """The ``properties`` of a JSON Schema object, ignoring anything malformed."""
    props = (parameters or {}).get("properties") if isinstance(parameters, Mapping) else None
    if not isinstance(props, Mapping):
        return {}
    return {str(k): v if isinstance(v, Mapping) else {} for k, v in props.items()}


def required_params(parameters: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The schema's ``required`` names that are strings, in order."""
    required = (parameters or {}).get("required") if isinstance(parameters, Mapping) else None
    if not isinstance(required, list | tuple):
        return ()
    return tuple(r for r in required if isinstance(r, str))


def parameter_text(parameters: Mapping[str, Any] | None) -> tuple[str, str]:
    """(parameter names, parameter descriptions) of a schema, each as one string."""
    props = schema_properties(parameters)
    names = " ".join(split_identifier(name) for name in props)
    descriptions = " ".join(str(p.get("description", "")) for p in props.values())
    return names, descriptions


def _join(parts: Iterable[str]) -> str:
    return " ".join(p.strip() for p in parts if p and p.strip())


FEW_PARAMETERS = 2  # a card with at most this many parameters embeds every description


def embedding_text(doc: ToolDoc) -> str:
    """The exact text embedded for a tool: readable name, summary, description, parameters,
    tags and examples, e.g. ``"get film details: Retrieve … Parameters: film id: The id …
    language."``: each required parameter with its description, the others by name alone, so
    a long list of options does not drown what the tool does; a card of at most
    ``FEW_PARAMETERS`` keeps every description (docs/ROUTING.md, "The text each side sees").

    The service hashes this string to decide whether a stored vector is still valid.
    """
    name = " ".join(words(doc.name)) or doc.name
    summary = doc.summary if doc.summary.strip() != doc.description.strip() else ""
    body = _join([summary, doc.description])
    text = f"{name}: {body}" if body else name
    text += "" if text.endswith((".", "!", "?", "。")) else "."
    properties = schema_properties(doc.parameters)
    required = set(
        properties if len(properties) <= FEW_PARAMETERS else required_params(doc.parameters)
    )
    params = [
        _join([" ".join(words(p)) + ":", str(s.get("description", ""))])
        if p in required
        else " ".join(words(p))
        for p, s in properties.items()
    ]
    if params:
        text += " Parameters: " + " ".join(p.rstrip(".").rstrip(":") + "." for p in params)
    if doc.tags:
        text += f" Tags: {', '.join(doc.tags)}."
    if doc.examples:
        text += " Examples: " + " ".join(doc.examples)
    return text
