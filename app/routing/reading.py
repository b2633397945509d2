"""How a step is read: the typed values it holds, and the words the models read.

A step an agent sends carries values: ids (``CHe179…``, ``asst_abc123``, ``12345678901``),
phone numbers, e-mail addresses, URLs, dates, file paths, ``owner/name`` pairs, quoted names.
They are evidence about *which parameter* a tool takes (``slots.py``), not about what the step
asks for: their digits and hex only steer BM25 and the embedding toward cards that happen to
share a token. So the step is read once into its values, each with its shape and the noun
that names it (``file 12345678901`` → ``file``), and the text the keyword and embedding stages
read, in which each value is replaced by a short word for its kind or left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from app.routing.text import STOPWORDS

# Shapes in the order they claim a span of the step: a span taken by one is not read again.
_URL = r"https?://[^\s'\"<>]+|\bwww\.[^\s'\"<>]+"
_EMAIL = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
_PHONE = r"(?<![\w+])\+\d[\d\s().-]{6,}\d(?!\w)"
_DATETIME = r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
_PATH = (
    r"(?<![\w/:.])(?:~|\.{1,2})?/(?:[^\s/'\"<>`]+/?)+"
    r"|(?<![\w/.-])[\w-]*[\w]\.(?:json|ya?ml|toml|txt|md|csv|tsv|pdf|docx?|xlsx?|pptx?|png|jpe?g|"
    r"gif|svg|mp3|mp4|wav|m4a|webm|zip|tar|gz|conf|cfg|ini|env|log|py|js|ts|go|rs|java|rb|sh|"
    r"html|css|xml|sql|bak)\b"
)
_SLASHED = r"(?<![\w/.:-])[A-Za-z0-9][\w.-]*/[\w.-]*[A-Za-z0-9](?:#\d+)?(?![\w/])"
_ID = (
    r"(?<![\w-])(?=[\w:.-]*\d)(?=[\w:.-]*[A-Za-z])[A-Za-z][\w:.-]{4,}[A-Za-z0-9](?![\w-])"
    r"|(?<![\w-])[a-z]{2,8}_[A-Za-z0-9]{3,}(?![\w-])"
)
_NUMBER = r"(?<![\w.])\d{5,}(?:\.\d+)?(?![\w.])|(?<![\w.])\d+\.\d{4,}(?![\w.])"
_QUOTED = (
    r"'[^'\n]{1,200}'|"
    r"\"[^\"\n]{1,200}\"|“[^”\n]{1,200}”|‘[^’\n]{1,200}’|「[^」\n]{1,200}」|«[^»\n]{1,200}»"
)

SHAPES: tuple[tuple[str, str], ...] = (
    ("quoted", _QUOTED),
    ("url", _URL),
    ("email", _EMAIL),
    ("phone", _PHONE),
    ("datetime", _DATETIME),
    ("path", _PATH),
    ("slashed", _SLASHED),
    ("id", _ID),
    ("number", _NUMBER),
)
_PATTERN = re.compile("|".join(f"(?P<{name}>{regex})" for name, regex in SHAPES), re.UNICODE)
# What the models read in place of a value of each shape ("" drops it). A quoted value is a
# name or a text the user wrote: its words stay.
READ_AS: dict[str, str] = {
    "url": "URL",
    "email": "email address",
    "phone": "phone number",
    "datetime": "date",
    "path": "file",
    "slashed": "",
    "id": "",
    "number": "",
}
_WORD = re.compile(r"[^\W\d_][\w'-]*", re.UNICODE)
# Words between a value and the noun that names it: "file 12345", "the file #12345",
# "conversation id CH…", "messaging service called 'X'".
_LINKING = frozenset(
    {
        "id",
        "sid",
        "number",
        "no",
        "called",
        "named",
        "titled",
        "#",
        "the",
        "a",
        "an",
        "this",
        "that",
        "my",
        "our",
        "your",
        "its",
        "their",
    }
)
MAX_VALUES = 24  # values read from a step, at most


@dataclass(frozen=True, slots=True)
class Value:
    """One value of a step: its text (quotes off), its shape, and the noun before it that
    names it (lower-case; ``""`` when none)."""

    text: str
    shape: str
    noun: str = ""


@dataclass(frozen=True, slots=True)
class StepReading:
    """A step's values, and the text the keyword and embedding stages read."""

    values: tuple[Value, ...]
    model_text: str


def _noun_before(before: str) -> str:
    """The last content word of ``before`` (the step up to a value, its values left out),
    skipping linking words, lower-case."""
    for word in reversed(_WORD.findall(before[-60:])[-4:]):
        lowered = word.lower()
        if lowered in _LINKING:
            continue
        return "" if lowered in STOPWORDS else lowered
    return ""


def _cleaned(shape: str, raw: str) -> str:
    if shape == "quoted":
        return raw[1:-1].strip()
    return raw.rstrip(".,;:!?)")


@lru_cache(maxsize=4096)
def read_step(text: str) -> StepReading:
    """The values of ``text`` and the text its models read (cached: a service reads a step
    once to embed it and once to rank it)."""
    values: list[Value] = []
    pieces: list[str] = []
    plain: list[str] = []  # the step without its values: where nouns are read
    at = 0
    for match in _PATTERN.finditer(text):
        shape = match.lastgroup or ""
        raw = match.group()
        value = _cleaned(shape, raw)
        plain.append(text[at : match.start()])
        if value and len(values) < MAX_VALUES:
            values.append(Value(value, shape, _noun_before("".join(plain[-3:]))))
        plain.append(" ")
        pieces.append(text[at : match.start()])
        pieces.append(raw if shape == "quoted" else _read_as(shape, raw, value))
        at = match.end()
    pieces.append(text[at:])
    model_text = " ".join("".join(pieces).split())
    return StepReading(tuple(values), model_text or text)


def _read_as(shape: str, raw: str, value: str) -> str:
    word = READ_AS.get(shape, "")
    if shape == "path" and "." not in value.rstrip("/").rsplit("/", 1)[-1]:
        word = "directory"  # a path whose last part has no extension names a directory
    tail = raw[len(value) :] if raw.startswith(value) else ""
    return f"{word}{tail}" if word else tail
