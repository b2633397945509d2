"""The registry browser's view of a tool card: its parameters as rows, its versions."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from app.tools.service import read_history
from registry.repository import StoredCard

MAX_DEPTH = 3


@dataclass(frozen=True, slots=True)
class ParamRow:
    """One (possibly nested, dotted) parameter of a card's JSON Schema."""

    path: str
    type: str
    required: bool
    description: str
    constraints: str


@dataclass(frozen=True, slots=True)
class CardPage:
    stored: StoredCard
    versions: list[tuple[int, datetime]]
    current_version: int
    deleted: bool


def _type(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind:
        item = schema.get("items")
        if kind == "array" and isinstance(item, dict) and item.get("type"):
            return f"array of {_type(item)}"
        return str(kind)
    for combo in ("anyOf", "oneOf"):
        if isinstance(schema.get(combo), list):
            return " | ".join(_type(s) for s in schema[combo] if isinstance(s, dict))
    return "any"


def _constraints(schema: dict[str, Any]) -> str:
    parts = []
    if "enum" in schema:
        parts.append("one of " + ", ".join(repr(v) for v in schema["enum"]))
    for key in ("format", "pattern", "minimum", "maximum", "minLength", "maxLength", "default"):
        if key in schema:
            parts.append(f"{key} {schema[key]!r}")
    return "; ".join(parts)


def schema_rows(schema: dict[str, Any] | None, prefix: str = "", depth: int = 0) -> list[ParamRow]:
    """The properties of an object schema, nested objects flattened as `a.b` (3 levels)."""
    if not isinstance(schema, dict) or depth >= MAX_DEPTH:
        return []
    required = set(schema.get("required") or [])
    rows: list[ParamRow] = []
    for name, prop in (schema.get("properties") or {}).items():
        if not isinstance(prop, dict):
            continue
        path = f"{prefix}{name}"
        rows.append(
            ParamRow(
                path=path,
                type=_type(prop),
                required=name in required,
                description=str(prop.get("description", "")),
                constraints=_constraints(prop),
            )
        )
        if prop.get("type") == "object":
            rows += schema_rows(prop, f"{path}.", depth + 1)
    return rows


def load_card(
    session: Session,
    namespace: str,
    name: str,
    version: int | None,
    visible: Collection[str] | None,
) -> CardPage:
    """A card (a deleted tool shows its last version), with every version; NotFound if none,
    or if its namespace is not ``visible`` (the same page)."""
    stored, versions = read_history(session, namespace, name, version, visible)
    return CardPage(stored, versions, versions[0][0], stored.deleted)
