"""The document checked by openapi-spec-validator, on the documents already loaded: the
validator resolves ``$ref``s from memory and never reaches the network or the disk.

Each problem says where it is: the file and the JSON pointer in it (``schemas/pet.yaml#/Pet/
properties/age``), and, when the validator got there through ``$ref``s, the place in the
root document it came from. The validator's own checks walk the document through ``$ref``s
and report errors relative to the node they were checking; each keyword validator is
wrapped here so an error it yields is stamped with the node it was given.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from jsonschema.exceptions import ValidationError, best_match
from jsonschema_path.paths import SchemaPath
from openapi_spec_validator import (
    OpenAPIV2SpecValidator,
    OpenAPIV30SpecValidator,
    OpenAPIV31SpecValidator,
)
from openapi_spec_validator.validation.validators import SpecValidator

from app.sources.documents import Documents, display

MAX_PROBLEMS = 20
_WHERE = "_toolreach_where"  # (document URI, pointer of the node checked, its root path)


def _validator_class(version: str) -> type[SpecValidator]:
    if version == "2.0":
        return OpenAPIV2SpecValidator
    return OpenAPIV30SpecValidator if version.startswith("3.0") else OpenAPIV31SpecValidator


def pointer(parts: Any) -> str:
    """An RFC 6901 JSON pointer of these keys."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _located(cls: type) -> type:
    """``cls`` (a keyword validator), stamping each error it yields with the node it checked."""

    def call(self: Any, *args: Any, **kwargs: Any) -> Iterator[ValidationError]:
        node = next((a for a in args if isinstance(a, SchemaPath)), None)
        for error in cls.__call__(self, *args, **kwargs):
            if node is not None and not hasattr(error, _WHERE):
                setattr(error, _WHERE, _where_of(node))
            yield error

    return type(cls.__name__, (cls,), {"__call__": call})


def _where_of(node: SchemaPath) -> tuple[str, Any, str]:
    with node.resolve() as resolved:
        uri = str(getattr(resolved.resolver, "_base_uri", ""))
        return uri, resolved.contents, pointer(node.parts)


class _Pointers:
    """Where a node sits in its document, found by identity (each document walked once)."""

    def __init__(self, documents: Documents) -> None:
        self._documents = documents
        self._found: dict[str, dict[int, str]] = {}

    def of(self, uri: str, node: Any) -> str | None:
        document = uri.partition("#")[0]
        if document not in self._found:
            self._found[document] = _index(self._documents.by_uri.get(document))
        return self._found[document].get(id(node))


def _index(document: Any) -> dict[int, str]:
    found: dict[int, str] = {}
    stack: list[tuple[Any, str]] = [(document, "")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, Mapping | list) and id(node) not in found:
            found[id(node)] = where
            items = node.items() if isinstance(node, Mapping) else enumerate(node)
            stack.extend((value, where + pointer([key])) for key, value in items)
    return found


def _name(uri: str, root: str) -> str:
    """A document as a person finds it: its path from the root document's folder (a file),
    else its URL."""
    if uri.startswith("file:") and root.startswith("file:"):
        folder = posixpath.dirname(urlsplit(root).path)
        return posixpath.relpath(urlsplit(uri).path, folder)
    return display(uri)


def describe(error: ValidationError, documents: Documents, pointers: _Pointers) -> str:
    """``file#/pointer: message`` (and the root's path to it, when reached through $refs)."""
    inner = pointer(getattr(error, "absolute_path", ()))
    stamped = getattr(error, _WHERE, None)
    root = documents.root
    if stamped is None:  # the metaschema's check of the root document: its own path
        where = f"{_name(root, root)}#{inner}"
    else:
        uri, node, via = stamped
        document = uri.partition("#")[0] or root
        start = pointers.of(document, node)
        if start is None and document == root:
            start = via  # a scalar (a null schema) has no identity to find: its path is it
        where = f"{_name(document, root)}#{start + inner}" if start is not None else ""
        if start != via or document != root:
            where = f"{where or _name(document, root)} (reached from #{via + inner})"
    return f"{where}: {_message(error)}"


def _message(error: ValidationError) -> str:
    """The validator's message, its first line; for "not valid under any of the given
    schemas", the closest of the alternatives too."""
    message = (str(error.message).strip().splitlines() or ["invalid"])[0][:300]
    if error.context:
        deepest = best_match(error.context)
        if deepest is not None:
            path = pointer(deepest.absolute_path)
            closest = (str(deepest.message).splitlines() or [""])[0][:200]
            message += f"; closest: {path + ': ' if path else ''}{closest}"
    return message


def problems(documents: Documents, version: str) -> list[str]:
    """What the validator finds wrong with the document (the first ``MAX_PROBLEMS``)."""

    def loaded(uri: str) -> Any:
        document = documents.by_uri.get(uri.partition("#")[0])
        if document is None:
            raise LookupError(f"{display(uri)} was not loaded")
        return document

    handlers = {scheme: loaded for scheme in ("<all_urls>", "http", "https", "file")}
    base = _validator_class(version)
    keywords = {name: _located(cls) for name, cls in base.keyword_validators.items()}
    checker = type(
        "LoadedDocuments", (base,), {"resolver_handlers": handlers, "keyword_validators": keywords}
    )
    pointers = _Pointers(documents)
    found: list[str] = []
    try:
        for error in checker(documents.document, base_uri=documents.root).iter_errors():
            found.append(describe(error, documents, pointers))
            if len(found) >= MAX_PROBLEMS:
                found.append("... (more problems not listed)")
                break
    except Exception as exc:  # a validator crash is a problem of the document, reported
        found.append(f"the validator stopped: {type(exc).__name__}: {str(exc)[:300]}")
    return found
