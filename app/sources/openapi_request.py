"""An OpenAPI operation's request as a card's arguments: its path, query, header and cookie
parameters and its body become one JSON Schema object (an object body's fields side by side
with the parameters, any other body one ``body`` argument), with where each argument goes
(the binding the gateway sends it by). Each ``$ref`` is read from the document it is in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.sources.binding import PLACES, Body, BodyArgument, BodyFields, Param
from app.sources.documents import DocumentError, Documents
from app.sources.openapi_schema import SchemaContext, convert_schema

# Headers the gateway sets itself (or HTTP does): never a tool's argument.
RESERVED_HEADERS = frozenset({"accept", "content-type", "authorization", "content-length", "host"})


@dataclass(frozen=True)
class Options:
    namespace: str
    source: str
    prefix: str = ""
    base_url: str | None = None
    # (location, lower-case name) of parameters the source's credentials supply.
    supplied: frozenset[tuple[str, str]] = frozenset()


@dataclass
class Operation:
    """One operation, and the documents its node and its path item are in (a ``$ref`` in
    either is read from its own document)."""

    method: str
    path: str
    node: Mapping[str, Any]
    item: Mapping[str, Any]
    base: str
    item_base: str


class Refused(Exception):
    """This operation cannot become a card; the message says why."""


def resolved(documents: Documents, node: Any, base: str) -> tuple[Any, str]:
    """A path item, operation, parameter, body or response that may itself be a ``$ref``
    (read from the document ``base``), followed (bounded); with the document it is in."""
    for _ in range(8):
        if isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
            uri, node = documents.resolve(node["$ref"], base)
            base = uri.partition("#")[0]
        else:
            return node, base
    raise DocumentError("a $ref chain of more than 8 links")


_Declared = tuple[Mapping[str, Any], str]


def _declaredparameters(ctx: SchemaContext, operation: Operation) -> list[_Declared]:
    """Path-level parameters, overridden by the operation's own of the same name and place,
    each with the document it is in."""
    found: dict[tuple[str, str], _Declared] = {}
    for level, base in ((operation.item, operation.item_base), (operation.node, operation.base)):
        for raw in level.get("parameters") or []:
            parameter, where = resolved(ctx.documents, raw, base)
            if isinstance(parameter, Mapping) and "name" in parameter and "in" in parameter:
                found[(str(parameter["in"]), str(parameter["name"]))] = (parameter, where)
    return list(found.values())


_V2_SCHEMA_KEYS = (
    "type", "format", "items", "enum", "default", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "minLength", "maxLength", "pattern", "minItems", "maxItems",
    "uniqueItems", "multipleOf",
)  # fmt: skip


def _parameter_schema(
    ctx: SchemaContext, parameter: Mapping[str, Any], base: str
) -> dict[str, Any]:
    if "schema" in parameter:
        schema = convert_schema(ctx, parameter["schema"], base)
    elif isinstance(parameter.get("content"), Mapping) and parameter["content"]:
        media = next(iter(parameter["content"].values()))
        schema = convert_schema(ctx, (media or {}).get("schema", {}), base)
    else:  # 2.0: the schema's words sit on the parameter itself
        words = {k: parameter[k] for k in _V2_SCHEMA_KEYS if k in parameter}
        schema = convert_schema(ctx, words, base)
    schema = dict(schema) if isinstance(schema, dict) else {}
    if parameter.get("description") and "description" not in schema:
        schema["description"] = str(parameter["description"])[:2000]
    return schema


def request_arguments(
    ctx: SchemaContext, operation: Operation, options: Options
) -> tuple[dict[str, Any], list[Param], Body | None]:
    """The card's parameters schema, where each argument goes, and the body's binding."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    arguments: list[Param] = []
    form: list[_Declared] = []
    body_node: Any = None
    for parameter, base in _declaredparameters(ctx, operation):
        where, name = str(parameter["in"]), str(parameter["name"])
        if where == "body":
            body_node = {"required": parameter.get("required") is True, "v2": parameter}
            body_node["base"] = base
            continue
        if where == "formData":
            form.append((parameter, base))
            continue
        place = PLACES.get(where)
        if place is None:
            continue
        if (where, name.lower()) in options.supplied:
            continue
        if where == "header" and name.lower() in RESERVED_HEADERS:
            continue
        argument = name if name not in properties else f"{where}_{name}"
        properties[argument] = _parameter_schema(ctx, parameter, base)
        if where == "path" or parameter.get("required") is True:
            required.append(argument)
        arguments.append(
            Param(
                arg=argument,
                place=place,
                name=name,
                style=parameter.get("style"),
                explode=parameter.get("explode"),
                collection=parameter.get("collectionFormat"),
            )
        )
    body = _body(ctx, operation, body_node, form, properties, required)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(dict.fromkeys(required))
    return schema, arguments, body


def _body(
    ctx: SchemaContext,
    operation: Operation,
    v2_body: Mapping[str, Any] | None,
    form: list[_Declared],
    properties: dict[str, Any],
    required: list[str],
) -> Body | None:
    """Add the request body's arguments; its binding (media type, fields or one argument)."""
    if form:  # 2.0 form fields: each its own argument
        return _form(ctx, operation, form, properties, required)
    if v2_body is not None:
        schema_node: Any = v2_body["v2"].get("schema", {})
        media: str | None = "application/json"
        needed = bool(v2_body["required"])
        base = str(v2_body["base"])
    else:
        request, base = resolved(ctx.documents, operation.node.get("requestBody"), operation.base)
        if not isinstance(request, Mapping) or not isinstance(request.get("content"), Mapping):
            return None
        media = media_type(request["content"])
        if media is None:
            kinds = ", ".join(map(str, request["content"]))
            raise Refused(f"a request body only in {kinds}, which the gateway cannot send")
        schema_node = (request["content"][media] or {}).get("schema", {})
        needed = request.get("required") is True
    assert media is not None
    schema = convert_schema(ctx, schema_node, base)
    fields: Any = schema.get("properties") if isinstance(schema, dict) else None
    flat = (
        isinstance(fields, dict)
        and schema.get("type") in ("object", None)
        and not set(fields) & set(properties)
        and not any(k in schema for k in ("allOf", "anyOf", "oneOf"))
    )
    if flat and isinstance(fields, dict):
        properties.update(fields)
        if needed:
            required.extend(f for f in schema.get("required", []) if f in fields)
        # A YAML key may be a number: the card refuses it with its own reason, not the binding.
        return BodyFields(media=media, fields=tuple(map(str, fields)))
    if "body" in properties:
        raise Refused("a parameter is named 'body', like the request body's argument")
    properties["body"] = schema
    if needed:
        required.append("body")
    return BodyArgument(media=media)


def _form(
    ctx: SchemaContext,
    operation: Operation,
    form: list[_Declared],
    properties: dict[str, Any],
    required: list[str],
) -> BodyFields:
    """Swagger 2.0 form fields, each its own argument; sent as the operation consumes."""
    consumes = operation.node.get("consumes") or ctx.documents.document.get("consumes") or []
    media = (
        "multipart/form-data"
        if "multipart/form-data" in consumes
        else "application/x-www-form-urlencoded"
    )
    fields = []
    for parameter, base in form:
        name = str(parameter["name"])
        if name in properties:
            raise Refused(f"the form field {name!r} has the name of a parameter")
        properties[name] = _parameter_schema(ctx, parameter, base)
        if parameter.get("required") is True:
            required.append(name)
        fields.append(name)
    return BodyFields(media=media, fields=tuple(fields))


def media_type(content: Mapping[str, Any]) -> str | None:
    """The request body's media type the gateway sends: JSON first, then forms, then raw."""
    kinds = [str(k) for k in content]
    for kind in kinds:
        if kind == "application/json" or kind.endswith("+json") or kind == "*/*":
            return kind
    for wanted in (
        "application/x-www-form-urlencoded",
        "multipart/form-data",
        "text/plain",
        "application/octet-stream",
    ):
        if wanted in kinds:
            return wanted
    return None
