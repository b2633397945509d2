"""The tool card: what an admin writes about a tool, checked on the way in (pydantic v2)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StringConstraints,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from registry.json_schema import SchemaError, check_schema
from registry.nul import NoNul

NAME_PATTERN = r"^[A-Za-z0-9_.:-]{1,128}$"
# One rule for a namespace wherever one is named (a card, a route, a search, a key's scope,
# MCP, stats): up to 64 of these characters, the first not a dot, so '.' and '..' (path
# segments a client resolves away) and hidden-file-like names are never namespaces.
NAMESPACE_PATTERN = r"^[A-Za-z0-9_:-][A-Za-z0-9_.:-]{0,63}$"
SOURCE_NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
SUMMARY_MAX_CHARS = 300
TRUSTED = MappingProxyType({"trusted": True})
"""Validation context for cards read back from storage, whose schemas were checked on write:
``ToolCard.model_validate(row, context=TRUSTED)`` skips the (~1 ms) JSON Schema checks."""

_Description = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=8000)
]
_Tag = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]
_Example = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=1000)]

# A full stop, "!" or "?" before whitespace, an ideographic full stop, or a line break.
_SENTENCE_END = re.compile(r"[.!?](?=\s)|。|\n")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "eg", "ie", "vs", "cf", "approx", "incl"})


# Fields added after the first cards were stored: left out of a card's content hash while
# unset, so every card written before them keeps its hash (and a re-import adds no version).
LATER_FIELDS = ("title", "annotations", "source")


def default_parameters() -> dict[str, Any]:
    """The schema of a tool that takes no arguments."""
    return {"type": "object", "properties": {}}


class ErrorEntry(BaseModel):
    """One row of a tool's error table: what a code means and what an agent should do next."""

    model_config = ConfigDict(extra="forbid")

    code: str = Field(min_length=1, max_length=64)
    meaning: str = Field(min_length=1, max_length=2000)
    suggestion: str | None = Field(default=None, max_length=2000)


class ToolAnnotations(BaseModel):
    """MCP's hints about a tool's behaviour (2025-11-25 ``ToolAnnotations``), kept as MCP
    spells them so they leave as they came. Hints, not guarantees: a client must not trust
    them from an untrusted server."""

    model_config = ConfigDict(extra="forbid")

    title: str | None = Field(default=None, min_length=1, max_length=SUMMARY_MAX_CHARS)
    readOnlyHint: StrictBool | None = None  # camelCase: MCP's own names
    destructiveHint: StrictBool | None = None
    idempotentHint: StrictBool | None = None
    openWorldHint: StrictBool | None = None


class SourceRef(BaseModel):
    """Where a tool lives: the registered source it was read from (app/sources/) and the
    upstream's own name for it (an MCP tool's name, an OpenAPI operation's method and path).
    The gateway forwards calls there; how exactly is the source's business, not the card's."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=SOURCE_NAME_PATTERN)
    ref: str = Field(min_length=1, max_length=2000)


class ToolCard(NoNul):
    """The native card an admin writes; ``summary`` defaults to the description's first sentence."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    namespace: str = Field(default="default", pattern=NAMESPACE_PATTERN)
    summary: str = ""
    # MCP's display name (``title``), distinct from the one-line summary routing reads.
    title: str | None = Field(default=None, min_length=1, max_length=SUMMARY_MAX_CHARS)
    description: _Description
    parameters: dict[str, Any] = Field(default_factory=default_parameters)
    returns: dict[str, Any] | None = None
    errors: list[ErrorEntry] = Field(default_factory=list, max_length=100)
    tags: list[_Tag] = Field(default_factory=list, max_length=32)
    examples: list[_Example] = Field(default_factory=list, max_length=50)
    pinned: bool = False
    source: SourceRef | None = None
    annotations: ToolAnnotations | None = None

    @field_serializer("annotations")
    def _annotations_set(self, value: ToolAnnotations | None) -> dict[str, Any] | None:
        """Only the hints given: an unset hint is absent, as in MCP, not null."""
        return None if value is None else value.model_dump(exclude_none=True)

    @field_validator("name")
    @classmethod
    def _not_only_dots(cls, value: str, info: ValidationInfo) -> str:
        if not _trusted(info) and set(value) == {"."}:  # '.' and '..' are path segments
            raise PydanticCustomError(
                "dot_segment", "a name of dots only cannot be part of a URL path"
            )
        return value

    @field_validator("summary", mode="before")
    @classmethod
    def _summary_none(cls, value: Any) -> Any:
        return "" if value is None else value

    @field_validator("summary")
    @classmethod
    def _summary_one_line(cls, value: str) -> str:
        line = " ".join(value.split())
        if len(line) > SUMMARY_MAX_CHARS:
            raise PydanticCustomError(
                "summary_too_long",
                f"summary must be one line of at most {SUMMARY_MAX_CHARS} characters, "
                f"got {len(line)}",
            )
        return line

    @field_validator("parameters", mode="before")
    @classmethod
    def _parameters_none(cls, value: Any) -> Any:
        return default_parameters() if value is None else value

    @field_validator("parameters")
    @classmethod
    def _parameters_schema(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        return value if _trusted(info) else _checked(value, require_object=True)

    @field_validator("returns")
    @classmethod
    def _returns_schema(
        cls, value: dict[str, Any] | None, info: ValidationInfo
    ) -> dict[str, Any] | None:
        if value is None or _trusted(info):
            return value
        return _checked(value, require_object=False)

    @field_validator("tags")
    @classmethod
    def _tags_unique(cls, value: list[str], info: ValidationInfo) -> list[str]:
        if not _trusted(info) and any("|" in tag for tag in value):  # the list column's separator
            raise PydanticCustomError("tag_separator", "a tag may not contain '|'")
        return list(dict.fromkeys(value))

    @model_validator(mode="after")
    def _summary_default(self) -> ToolCard:
        if not self.summary:
            self.summary = first_sentence(self.description)
        return self


def _trusted(info: ValidationInfo) -> bool:
    return isinstance(info.context, Mapping) and info.context.get("trusted") is True


def _checked(schema: dict[str, Any], *, require_object: bool) -> dict[str, Any]:
    try:
        check_schema(schema, require_object=require_object)
    except SchemaError as exc:
        # A custom error keeps the message exactly as written (no "Value error, " prefix).
        raise PydanticCustomError("json_schema", str(exc)) from None
    return schema


_STOPS = " .!:;"


def _opening(text: str, count: int) -> list[str]:
    """``text``'s first ``count`` words, lower-cased, the last without its closing stop."""
    words = text.casefold().split()[:count]
    return [*words[:-1], words[-1].rstrip(_STOPS)] if words else []


def says_first(text: str, summary: str) -> bool:
    """Whether ``text`` opens with the words of ``summary`` (case, spacing and a closing stop
    ignored): an OpenAPI operation's description that repeats its summary, so that neither
    is said twice."""
    count = len(summary.split())
    return count > 0 and _opening(text, count) == _opening(summary, count)


def after_summary(description: str, summary: str) -> str:
    """What ``description`` says beyond ``summary``: the description without the summary it
    opens with (as often as it repeats it: cards imported before it was said once)."""
    rest = description.strip()
    count = len(summary.split())
    while rest and says_first(rest, summary):
        last = list(re.finditer(r"\S+", rest))[count - 1]
        after = rest[last.end() :]
        if not (last.group()[-1] in _STOPS or after[:1] in ("", "\n")):
            break  # the summary opens a longer sentence: keep it whole
        rest = after.lstrip(_STOPS + "\n\t")
    return rest


def first_sentence(text: str) -> str:
    """The first sentence (or line) of ``text``, on one line, at most 300 characters."""
    text = text.strip()
    for match in _SENTENCE_END.finditer(text):
        before = text[: match.start()]
        if match.group() == "." and _ends_with_abbreviation(before):
            continue
        return _clip(before if match.group() == "\n" else text[: match.end()])
    return _clip(text)


def _ends_with_abbreviation(text: str) -> bool:
    words = text.rsplit(None, 1)
    return bool(words) and words[-1].lower() in _ABBREVIATIONS


def _clip(text: str) -> str:
    line = " ".join(text.split())
    if len(line) <= SUMMARY_MAX_CHARS:
        return line
    head = line[: SUMMARY_MAX_CHARS - 1]
    cut = head.rsplit(" ", 1)[0] if " " in head else head
    return cut.rstrip(" ,;:") + "…"


def content_hash(card: ToolCard) -> str:
    """sha256 of the card's content as canonical JSON; the namespace is not content, and a
    card without a source hashes as it did before cards could have one."""
    content = card.model_dump(mode="json", exclude={"namespace"})
    for name in LATER_FIELDS:
        if content[name] is None:
            del content[name]
    text = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
