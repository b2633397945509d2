"""An OpenAPI document (Swagger 2.0, OpenAPI 3.0, 3.1) becomes cards, one per operation.

Each operation's card:

* ``name``: its ``operationId``, else its method and path (``get_files_file_id``), with every
  character the card's name pattern refuses made ``_``, cut to 128; a name taken twice gets
  ``_2``, ``_3``...
* ``summary``, ``description``: the operation's own; an operation with neither gets a summary
  written from its operationId, method and path (``openapi_verbs.written_summary``: "Create
  an alpha sender for the service"), else its method and path;
* ``parameters``: one JSON Schema object of its path, query, header and cookie parameters
  and its request body (app/sources/openapi_request.py), ``$ref``s inlined and bounded
  (app/sources/openapi_schema.py); parameters the source's credentials supply are left out;
* ``returns``: its first success response's schema; ``errors``: its documented 4xx and 5xx
  responses, each with what an agent should do next; ``tags``: its tags;
* ``examples``: the actions its body declares (``reboot the droplet``:
  app/sources/openapi_verbs.py); no verbs are invented.

Its *binding* (app/sources/binding.py ``HttpBinding``) says how the gateway sends the HTTP
request: method, server, path template, and where each argument goes. A card that the
registry refuses (registry/json_schema.py) is tried again with its schemas cut shorter
(fewer ``$ref``s inlined, then no ``returns``, then no ``pattern``s); an operation that still
fails, or that cannot be called (a body in a media type the gateway cannot send), or whose
node cannot be read, is refused with its reason; the rest of the document is imported. An
operation whose server cannot be used (app/sources/openapi_servers.py) is imported with no
server in its binding, the reason at the end of its description and in the notes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from app.sources import openapi_verbs
from app.sources.binding import HttpBinding
from app.sources.documents import Deadline, DocumentError, Documents
from app.sources.openapi_request import (
    Operation,
    Options,
    Refused,
    media_type,
    request_arguments,
    resolved,
)
from app.sources.openapi_schema import SchemaContext, SchemaTooLarge, convert_schema
from app.sources.openapi_servers import Unserved, server
from registry.card import NAME_PATTERN, ToolCard

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
DESCRIPTION_MAX = 8000
NOT_CALLABLE = "Not callable through the gateway until the source has a base_url"
_NAME_OK = re.compile(NAME_PATTERN)
_NOT_NAME = re.compile(r"[^A-Za-z0-9_.:-]+")
# Each try: how many nested $refs to inline, keep `returns`, keep `pattern`s.
ATTEMPTS = ((3, True, True), (2, True, True), (1, False, True), (0, False, False))
SUGGESTIONS = {
    "400": "Check the arguments against the tool's parameters, correct them and call again.",
    "401": "The source's credentials are missing or wrong; tell the operator. A retry "
    "will not help.",
    "403": "The source's credentials may not do this; do not retry. Tell the user.",
    "404": "Check the identifiers passed: search or list first to find a real one.",
    "405": "This operation is not allowed on that resource; choose another tool.",
    "409": "The resource changed or already exists: read its current state, then decide.",
    "412": "The resource changed since it was read: read it again, then retry with the "
    "new version.",
    "413": "The request is too large: send less at once.",
    "422": "The arguments are well-formed but not acceptable: fix them as the message says.",
    "429": "Rate limited: wait a little, then retry.",
}


@dataclass
class Converted:
    """The cards and bindings of a document, what was refused and why, its problems."""

    version: str
    operations: int = 0
    cards: list[tuple[ToolCard, HttpBinding]] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def spec_version(document: Any) -> str:
    """ "2.0", "3.0.x" or "3.1.x"; DocumentError for anything else."""
    if not isinstance(document, Mapping):
        raise DocumentError("an OpenAPI document is a JSON or YAML object")
    version = document.get("openapi") or document.get("swagger")
    if not isinstance(version, str) or not re.match(r"^(2\.0|3\.[01]\.\d+)$", version):
        raise DocumentError(f"not an OpenAPI 3.0/3.1 or Swagger 2.0 document (version {version!r})")
    return version


def tool_name(raw: str, prefix: str) -> str:
    """``prefix + raw`` made to fit the card's name pattern (invalid runs become '_')."""
    name = _NOT_NAME.sub("_", prefix + raw).strip("_") or "operation"
    return name[:128]


@dataclass(frozen=True)
class Unreadable:
    """An operation (or a path item) whose node cannot be read: its ``$ref`` leads nowhere."""

    where: str
    reason: str


def _operations(documents: Documents) -> Iterator[Operation | Unreadable]:
    paths = documents.document.get("paths") or {}
    for path, raw in paths.items() if isinstance(paths, Mapping) else ():
        try:
            item, item_base = resolved(documents, raw, documents.root)  # may be in another file
        except DocumentError as exc:
            yield Unreadable(f"{path}", str(exc))
            continue
        if not isinstance(item, Mapping):
            continue
        for method in METHODS:
            # An operation kept in a file of its own (DigitalOcean's layout) is followed too.
            try:
                node, base = resolved(documents, item.get(method), item_base)
            except DocumentError as exc:
                yield Unreadable(f"{method.upper()} {path}", str(exc))
                continue
            if isinstance(node, Mapping):
                yield Operation(method.upper(), str(path), node, item, base, item_base)


# What one malformed operation may raise as it is read: it is refused, the document is not.
_MALFORMED = (Refused, DocumentError, ValueError, TypeError, KeyError, AttributeError, IndexError)


def convert(
    documents: Documents,
    options: Options,
    deadline: Deadline | None = None,
    max_card_bytes: int | None = None,
) -> Converted:
    """Every operation of the document as a (card, binding), or a refusal with its reason;
    one that the gateway cannot call is kept, and said in ``notes``. ``max_card_bytes``: the
    cards' schemas in all, as JSON (each card is bounded by the registry; a small document
    of many operations that each inline a large schema is not)."""
    version = spec_version(documents.document)
    result = Converted(version)
    taken: dict[str, int] = {}
    made = 0
    for operation in _operations(documents):
        if deadline is not None:
            deadline.check("converting the document")
        result.operations += 1
        if isinstance(operation, Unreadable):
            result.refused.append({"operation": operation.where, "reason": operation.reason})
            continue
        where = f"{operation.method} {operation.path}"
        name = _unique_name(operation, options, taken, result.notes)
        try:
            card, binding = _card(documents, version, operation, name, options)
        except _MALFORMED as exc:
            reason = str(exc) if isinstance(exc, Refused | DocumentError) else _malformed(exc)
            result.refused.append({"operation": where, "name": name, "reason": reason})
            continue
        made += _schema_bytes(card)
        if max_card_bytes is not None and made > max_card_bytes:
            raise DocumentError(
                f"the cards' schemas are larger than {max_card_bytes} bytes in all "
                f"(TOOLREACH_SOURCE_MAX_CARD_BYTES), at {where}"
            )
        if binding.not_callable is not None:
            result.notes.append(f"{where}: imported; not callable: {binding.not_callable}")
        result.cards.append((card, binding))
    return result


def _unique_name(
    operation: Operation, options: Options, taken: dict[str, int], notes: list[str]
) -> str:
    raw = operation.node.get("operationId")
    name = tool_name(
        raw if isinstance(raw, str) and raw else _method_path(operation), options.prefix
    )
    taken[name] = taken.get(name, 0) + 1
    if taken[name] > 1:
        where = f"{operation.method} {operation.path}"
        notes.append(f"{where}: the name {name!r} is taken; named {name}_{taken[name]}")
        name = f"{name[:120]}_{taken[name]}"
    return name


def _malformed(exc: Exception) -> str:
    return f"the operation is malformed ({type(exc).__name__}: {str(exc)[:300]})"


def _schema_bytes(card: ToolCard) -> int:
    schemas = (card.parameters, card.returns or {})
    return sum(len(json.dumps(s, ensure_ascii=False, separators=(",", ":"))) for s in schemas)


def _method_path(operation: Operation) -> str:
    """``get_dogs_dogId`` for GET /dogs/{dogId}: an operation without an operationId."""
    return f"{operation.method.lower()}_{re.sub(r'[^A-Za-z0-9]+', '_', operation.path).strip('_')}"


def _card(
    documents: Documents, version: str, operation: Operation, name: str, options: Options
) -> tuple[ToolCard, HttpBinding]:
    served, unserved = _server(documents, version, operation, options)
    problem = "its parameters are larger than a card may hold, even with no $ref inlined"
    for max_refs, with_returns, patterns in ATTEMPTS:
        try:
            parameters, arguments, body = request_arguments(
                _context(documents, version, max_refs, patterns), operation, options
            )
        except SchemaTooLarge:
            continue
        returns = (
            _returns_within(documents, version, operation, max_refs, patterns)
            if with_returns
            else None
        )
        data = {
            "name": name,
            "namespace": options.namespace,
            **_texts(operation, unserved),
            "parameters": parameters,
            "returns": returns,
            "errors": _errors(documents, operation),
            "tags": _tags(operation),
            "examples": _examples(operation, parameters),
            "source": {"name": options.source, "ref": f"{operation.method} {operation.path}"},
        }
        try:
            card = ToolCard.model_validate(data)
        except ValidationError as exc:
            problem = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3]
            )
            continue
        binding = HttpBinding(
            method=operation.method,
            server=served,
            path=operation.path,
            safe=operation.method in SAFE_METHODS,
            not_callable=unserved,
            params=tuple(arguments),
            body=body,
        )
        return card, binding
    raise Refused(f"the card is refused even with its schemas cut short: {problem}")


def _examples(operation: Operation, parameters: dict[str, Any]) -> list[str]:
    """Requests that should route to it, as its body declares them (openapi_verbs.py)."""
    return openapi_verbs.examples(operation.path, parameters)


def _context(documents: Documents, version: str, max_refs: int, patterns: bool) -> SchemaContext:
    """A fresh build of one schema: its own budget (app/sources/openapi_schema.py)."""
    return SchemaContext(
        documents,
        openapi2=version == "2.0",
        openapi30=version.startswith("3.0"),
        max_refs=max_refs,
        keep_patterns=patterns,
    )


def _returns_within(
    documents: Documents, version: str, operation: Operation, max_refs: int, patterns: bool
) -> dict[str, Any] | None:
    """The result's schema at the deepest level up to ``max_refs`` that fits, else none."""
    for level in range(max_refs, -1, -1):
        try:
            return _returns(_context(documents, version, level, patterns), operation)
        except SchemaTooLarge:
            continue
    return None


def _texts(operation: Operation, not_callable: str | None = None) -> dict[str, str]:
    """Its summary and description; the reason the gateway cannot call it, at the end."""
    summary = " ".join(str(operation.node.get("summary") or "").split())[:300]
    description = str(operation.node.get("description") or "").strip()
    if not summary and not description:
        summary = openapi_verbs.written_summary(
            operation.method, operation.path, str(operation.node.get("operationId") or "")
        )
    text = "\n\n".join(part for part in (summary, description) if part)
    text = text or f"{operation.method} {operation.path}"
    if operation.node.get("deprecated") is True:
        text = "Deprecated. " + text
    note = f"\n\n{NOT_CALLABLE}: {not_callable}" if not_callable else ""
    if len(text) + len(note) > DESCRIPTION_MAX:
        text = text[: DESCRIPTION_MAX - len(note) - 1].rstrip() + "…"
    return {"summary": summary, "description": text + note}


def _tags(operation: Operation) -> list[str]:
    tags = operation.node.get("tags") or []
    return [
        " ".join(str(t).split())[:64]
        for t in tags
        if isinstance(t, str) and t.strip() and "|" not in t
    ][:32]


def _server(
    documents: Documents, version: str, operation: Operation, options: Options
) -> tuple[str | None, str | None]:
    """Where the gateway sends it: the source's base URL, else the operation's own server;
    no server and the reason it is not callable when that cannot be used
    (app/sources/openapi_servers.py)."""
    if options.base_url is not None:
        return options.base_url, None
    try:
        return server(documents, version, operation), None
    except Unserved as exc:
        return None, str(exc)


def _responses(operation: Operation) -> Mapping[str, Any]:
    responses = operation.node.get("responses")
    return responses if isinstance(responses, Mapping) else {}


def _returns(ctx: SchemaContext, operation: Operation) -> dict[str, Any] | None:
    for code, raw in sorted(_responses(operation).items(), key=lambda item: str(item[0])):
        if not str(code).startswith("2"):
            continue
        response, base = resolved(ctx.documents, raw, operation.base)
        if not isinstance(response, Mapping):
            continue
        node = response.get("schema")  # 2.0
        if node is None and isinstance(response.get("content"), Mapping):
            media = media_type(response["content"]) or next(iter(response["content"]), None)
            node = (response["content"].get(media) or {}).get("schema") if media else None
        if node is not None:
            schema = convert_schema(ctx, node, base)
            return schema if isinstance(schema, dict) and schema else None
        return None
    return None


def _errors(documents: Documents, operation: Operation) -> list[dict[str, Any]]:
    entries = []
    for code, raw in _responses(operation).items():
        code = str(code).upper()
        if code[:1] not in ("4", "5"):
            continue
        response = resolved(documents, raw, operation.base)[0]
        about = response.get("description") if isinstance(response, Mapping) else None
        meaning = " ".join(str(about or "").split())[:2000] or f"HTTP {code}"
        suggestion = SUGGESTIONS.get(code) or (
            "The source failed: retry later, or use another tool." if code.startswith("5") else None
        )
        entries.append({"code": code, "meaning": meaning, "suggestion": suggestion})
    return entries[:100]
