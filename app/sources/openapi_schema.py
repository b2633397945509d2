"""OpenAPI schema objects (Swagger 2.0, OpenAPI 3.0, 3.1) as plain JSON Schema, ``$ref``s
inlined and bounded.

A card's schema must be self-contained and small (registry/json_schema.py), and models read
a schema better inlined than through ``$ref``s. So each ``$ref`` is replaced by what it
names, up to ``max_refs`` nested ``$ref``s; past that, or where a ``$ref`` would enter
itself again (a cycle: a folder holds folders), it is *cut*: replaced by a stub that keeps
the target's type and says, in its description, what was left out. A stub accepts what the
full schema would; only the details are gone.

Inlining multiplies: five schemas of 150 properties, each a ``$ref`` to the next, would be
150^3 nodes at three levels from a 27 KB document. So the schema is built against a
``Budget`` of the registry's own bounds (bytes as JSON, subschemas), charged for every node
*as it is made*: the first node past it stops the build at once (``SchemaTooLarge``), and
the caller tries again with fewer levels. The work of one build is bounded by what it may
produce, never by what the ``$ref``s would expand to.

OpenAPI's own words become JSON Schema's: 3.0's ``nullable`` a ``"null"`` type, draft 4's
boolean ``exclusiveMinimum`` a number, 2.0's ``type: file`` a binary string, 2.0's tuple
``items`` an ``anyOf``, ``example`` an ``examples`` list; ``discriminator``, ``xml``,
``externalDocs`` and ``x-`` extensions are dropped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.sources.documents import Documents
from registry.json_schema import MAX_SCHEMA_BYTES, MAX_SUBSCHEMAS

_DROPPED = frozenset({"discriminator", "xml", "externalDocs", "example", "nullable", "$ref"})
_ONE = ("not", "additionalItems", "contains", "propertyNames", "if", "then", "else")
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems")
_MAP = ("properties", "patternProperties", "dependentSchemas")
MAX_ENUM = 500  # registry/json_schema.py refuses more
STUB_NOTE_CHARS = 160


class SchemaTooLarge(Exception):
    """The schema being built outgrew its budget: this build stops at once."""


@dataclass
class Budget:
    """What one schema may still take: bytes as compact JSON (an estimate from above) and
    subschemas, the registry's bounds (registry/json_schema.py)."""

    bytes_left: int = MAX_SCHEMA_BYTES
    nodes_left: int = MAX_SUBSCHEMAS

    def spend(self, size: int, nodes: int = 0) -> None:
        self.bytes_left -= size
        self.nodes_left -= nodes
        if self.bytes_left < 0 or self.nodes_left < 0:
            raise SchemaTooLarge


def _size(value: Any) -> int:
    """About a JSON value's size as the registry measures it (compact UTF-8)."""
    if isinstance(value, str):
        return len(value.encode()) + 2
    if isinstance(value, bool | int | float) or value is None:
        return len(repr(value))
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode())


@dataclass
class SchemaContext:
    """What converting one card's schema needs: the documents, the version, the bounds."""

    documents: Documents
    openapi2: bool
    openapi30: bool
    max_refs: int = 3
    keep_patterns: bool = True
    budget: Budget = field(default_factory=Budget)


def convert_schema(ctx: SchemaContext, node: Any, base: str) -> Any:
    """``node`` (an OpenAPI schema in the document ``base``) as bounded JSON Schema."""
    return _convert(ctx, node, base, (), 0)


def _convert(ctx: SchemaContext, node: Any, base: str, seen: tuple[str, ...], refs: int) -> Any:
    if isinstance(node, bool):
        return node
    if not isinstance(node, Mapping):
        return {}
    if isinstance(node.get("$ref"), str):
        return _inline(ctx, node, base, seen, refs)
    ctx.budget.spend(2, 1)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED or key.startswith("x-"):
            continue
        ctx.budget.spend(len(key) + 4)
        if key in _MAP and isinstance(value, Mapping):
            out[key] = {k: _convert(ctx, v, base, seen, refs) for k, v in value.items()}
        elif key in _MANY and isinstance(value, list):
            out[key] = [_convert(ctx, v, base, seen, refs) for v in value]
        elif key in _ONE or key == "additionalProperties":
            out[key] = _convert(ctx, value, base, seen, refs)
        elif key == "items":
            out[key] = _items(ctx, value, base, seen, refs)
        elif key == "pattern" and not ctx.keep_patterns:
            continue
        else:
            if not (key == "enum" and isinstance(value, list) and len(value) > MAX_ENUM):
                ctx.budget.spend(_size(value))  # a longer enum is dropped (_words)
            out[key] = value
    if "example" in node and "examples" not in out:
        ctx.budget.spend(_size(node["example"]) + 13)
    return _words(ctx, node, out)


def _items(ctx: SchemaContext, value: Any, base: str, seen: tuple[str, ...], refs: int) -> Any:
    if isinstance(value, list):  # 2.0 (and draft 4) tuple form: read as "any of these"
        schemas = [_convert(ctx, v, base, seen, refs) for v in value]
        return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
    return _convert(ctx, value, base, seen, refs)


def _inline(
    ctx: SchemaContext, node: Mapping[str, Any], base: str, seen: tuple[str, ...], refs: int
) -> Any:
    target_uri, target = ctx.documents.resolve(node["$ref"], base)
    siblings = {k: v for k, v in node.items() if k != "$ref"}
    if target_uri in seen:
        result = _stub(ctx, target, target_uri, "recursive")
    elif refs >= ctx.max_refs:
        result = _stub(ctx, target, target_uri, "nested too deep")
    else:
        document = target_uri.partition("#")[0]
        result = _convert(ctx, target, document, (*seen, target_uri), refs + 1)
    if siblings and isinstance(result, dict):  # 3.1 lets a $ref carry its own description
        result = {**result, **_convert(ctx, siblings, base, seen, refs)}
    return result


def _stub(ctx: SchemaContext, target: Any, uri: str, why: str) -> dict[str, Any]:
    """What a cut ``$ref`` becomes: the target's type, and a note of what was left out."""
    name = uri.rpartition("/")[2] or "schema"
    stub: dict[str, Any] = {}
    if isinstance(target, Mapping):
        if isinstance(target.get("type"), str | list):
            stub["type"] = target["type"]
        about = target.get("description") or target.get("title") or ""
        about = " ".join(str(about).split())[:STUB_NOTE_CHARS]
    else:
        about = ""
    stub["description"] = f"{name} ({why}; details left out){': ' + about if about else ''}"
    ctx.budget.spend(_size(stub["description"]) + 40, 1)
    return stub


def _words(ctx: SchemaContext, node: Mapping[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI's keywords that mean something else, or nothing, in JSON Schema."""
    if ctx.openapi2 and out.get("type") == "file":
        out["type"], out["format"] = "string", "binary"
    if node.get("nullable") is True and (ctx.openapi30 or ctx.openapi2):
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        elif "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    if "example" in node and "examples" not in out:
        out["examples"] = [node["example"]]
    elif "examples" in out and not isinstance(out["examples"], list):
        del out["examples"]  # 3.0's media-type examples map is not JSON Schema's list
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(out.get(bound), bool):
            if out[bound] and limit in out:
                out[bound] = out.pop(limit)
            else:
                del out[bound]
    if isinstance(out.get("enum"), list) and len(out["enum"]) > MAX_ENUM:
        del out["enum"]
    if isinstance(out.get("required"), list) and not out["required"]:
        del out["required"]  # draft 4 refuses an empty list; it means nothing anyway
    return out
