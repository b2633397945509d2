"""An OpenAPI document and every document its ``$ref``s reach, loaded once each, bounded.

A document is read from a file or an http(s) URL. The ``$ref``s it holds may point into other
files (``schemas/pet.yaml#/Pet``); those are loaded too, before anything is converted, so the
conversion (app/sources/openapi.py) and the validator work on memory only, never on the
network or the disk. What may be loaded:

* from a file: files in the root document's directory or below it, nothing else;
* from a URL: URLs on the root document's origin (scheme, host, port), nothing else;
* at most ``MAX_DOCUMENTS`` documents and ``MAX_TOTAL_BYTES`` in all;
* YAML without aliases (an alias bomb would make every later walk exponential).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit
from urllib.request import url2pathname

import yaml

MAX_DOCUMENTS = 50
MAX_TOTAL_BYTES = 64 * 1024 * 1024

Fetch = Callable[[str], Awaitable[bytes]]


class DocumentError(ValueError):
    """A document cannot be read, parsed, or may not be loaded; the message says which."""


class _NoAliases(yaml.SafeLoader):
    """YAML's safe loader, refusing aliases."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("YAML aliases (*name) are not accepted in a source document")
        return super().compose_node(parent, index)


def parse_document(raw: bytes, uri: str) -> Any:
    """JSON, or YAML (a superset) when it is not JSON."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DocumentError(f"{display(uri)}: not UTF-8 text") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return yaml.load(text, Loader=_NoAliases)
    except yaml.YAMLError as exc:
        raise DocumentError(f"{display(uri)}: neither JSON nor YAML: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


def file_uri(path: str | Path) -> str:
    return Path(path).resolve().as_uri()


def display(uri: str) -> str:
    """A URI as a person wrote it: a file's path, else the URL."""
    return url2pathname(urlsplit(uri).path) if uri.startswith("file:") else uri


def split_ref(ref: str, base: str) -> tuple[str, str]:
    """(the document's URI, the JSON pointer) that ``ref`` names, read from ``base``."""
    absolute = urljoin(base, ref)
    uri, _, fragment = absolute.partition("#")
    return uri, unquote(fragment)


def pointer_get(document: Any, pointer: str) -> Any:
    """The node at an RFC 6901 JSON pointer; DocumentError if there is none."""
    node = document
    if pointer in ("", "/"):
        return node
    for raw in pointer.lstrip("/").split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise DocumentError(f"no node at #{pointer}")
    return node


def iter_refs(node: Any) -> Iterator[str]:
    """Every ``$ref`` string in a document (iteratively: a deep document cannot overflow)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, Mapping):
            ref = current.get("$ref")
            if isinstance(ref, str):
                yield ref
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)


@dataclass
class Documents:
    """The root document's URI and every loaded document by URI (no fragment)."""

    root: str
    by_uri: dict[str, Any] = field(default_factory=dict)
    raw_bytes: int = 0

    @property
    def document(self) -> Any:
        return self.by_uri[self.root]

    def resolve(self, ref: str, base: str) -> tuple[str, Any]:
        """(absolute URI with fragment, node) of ``ref`` read from the document ``base``."""
        uri, pointer = split_ref(ref, base)
        if uri not in self.by_uri:
            raise DocumentError(f"$ref {ref!r} points into a document that was not loaded")
        try:
            return f"{uri}#{pointer}", pointer_get(self.by_uri[uri], pointer)
        except DocumentError as exc:
            raise DocumentError(f"$ref {ref!r}: {exc}") from None


def may_load(uri: str, root: str) -> bool:
    """Whether a document the root's ``$ref``s name may be loaded (see the module's rules)."""
    target, origin = urlsplit(uri), urlsplit(root)
    if origin.scheme == "file":
        if target.scheme != "file":
            return False
        folder = Path(url2pathname(origin.path)).parent
        return Path(url2pathname(target.path)).resolve().is_relative_to(folder)
    return (target.scheme, target.netloc) == (origin.scheme, origin.netloc)


async def load_documents(root: str, fetch: Fetch) -> Documents:
    """The root document and, transitively, every document its ``$ref``s point into."""
    documents = Documents(root)
    waiting = [root]
    while waiting:
        uri = waiting.pop()
        if uri in documents.by_uri:
            continue
        if not may_load(uri, root):
            raise DocumentError(
                f"a $ref points to {display(uri)}, outside the document's "
                + ("folder" if root.startswith("file:") else "origin")
            )
        if len(documents.by_uri) >= MAX_DOCUMENTS:
            raise DocumentError(f"the document's $refs reach more than {MAX_DOCUMENTS} documents")
        raw = await fetch(uri)
        documents.raw_bytes += len(raw)
        if documents.raw_bytes > MAX_TOTAL_BYTES:
            raise DocumentError(f"the documents are larger than {MAX_TOTAL_BYTES} bytes in all")
        document = parse_document(raw, uri)
        documents.by_uri[uri] = document
        waiting.extend(target for target in (split_ref(ref, uri)[0] for ref in iter_refs(document)))
    return documents


async def read_file(uri: str) -> bytes:
    """A file's bytes, for ``load_documents``."""
    path = Path(url2pathname(urlsplit(uri).path))
    try:
        if path.stat().st_size > MAX_TOTAL_BYTES:
            raise DocumentError(f"{path}: larger than {MAX_TOTAL_BYTES} bytes")
        return path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read: {exc.strerror or exc}") from None
