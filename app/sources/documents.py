"""An OpenAPI document and every document its ``$ref``s reach, loaded once each, bounded.

A document is read from a file or an http(s) URL. The ``$ref``s it holds may point into other
files (``schemas/pet.yaml#/Pet``); those are loaded too, before anything is converted, so the
conversion (app/sources/openapi.py) and the validator work on memory only, never on the
network or the disk. What may be loaded:

* from a file: files in the root document's directory or below it, nothing else;
* from a URL: URLs on the root document's origin (scheme, host, port), nothing else;
* within ``DocumentLimits``: documents, bytes in all, ``$ref`` hops from the root
  document, and a deadline for reading, checking and converting (the settings
  ``TOOLREACH_SOURCE_MAX_DOCUMENTS``, ``_MAX_BYTES``, ``_MAX_DEPTH``, ``_READ_SECONDS``; and
  the cards made of them, ``_MAX_CARD_BYTES``, app/sources/openapi.py);
* YAML without aliases (an alias bomb would make every later walk exponential).

A file that is not there is the caller's mistake (``DocumentMissing``, with its path and
the ``$ref`` that named it); anything else that stops the reading is a ``DocumentError``.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit
from urllib.request import url2pathname

import yaml

from app.settings import Settings

Fetch = Callable[[str], Awaitable[bytes]]


class DocumentError(ValueError):
    """A document cannot be read, parsed, or may not be loaded; the message says which."""


class DocumentMissing(DocumentError):
    """A local file the source names, or its ``$ref``s name, is not there."""


@dataclass(frozen=True)
class DocumentLimits:
    """What reading one source's documents may take (docs/SOURCES.md, "Bounds")."""

    max_documents: int = 20_000
    max_bytes: int = 64 * 1_048_576
    max_depth: int = 64
    seconds: float = 120.0
    max_card_bytes: int = 128 * 1_048_576

    @classmethod
    def from_settings(cls, settings: Settings) -> DocumentLimits:
        return cls(
            max_documents=settings.source.max_documents,
            max_bytes=settings.source.max_bytes,
            max_depth=settings.source.max_depth,
            seconds=settings.source.read_seconds,
            max_card_bytes=settings.source.max_card_bytes,
        )

    def deadline(self) -> Deadline:
        return Deadline(time.monotonic() + self.seconds, self.seconds)


@dataclass(frozen=True)
class Deadline:
    """When reading, checking and converting a source's documents must be done by."""

    at: float
    seconds: float

    def check(self, doing: str) -> None:
        if time.monotonic() > self.at:
            raise DocumentError(
                f"{doing} took longer than {self.seconds:g} s (TOOLREACH_SOURCE_READ_SECONDS)"
            )


class _NoAliases(yaml.SafeLoader):
    """YAML's safe loader, refusing aliases."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("YAML aliases (*name) are not accepted in a source document")
        return super().compose_node(parent, index)


# libyaml's safe loader, ten times the pure-Python one's speed (a description of thousands of
# files is mostly parsing); it cannot refuse aliases as it reads, so it reads only a text
# with no ``*`` in it (an alias is ``*name``), and the pure-Python loader reads the rest.
FAST_YAML: Any = getattr(yaml, "CSafeLoader", None)


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
        if "*" not in text and FAST_YAML is not None:  # no alias can be in it: libyaml's loader
            return yaml.load(text, Loader=FAST_YAML)
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


async def load_documents(
    root: str, fetch: Fetch, limits: DocumentLimits | None = None, deadline: Deadline | None = None
) -> Documents:
    """The root document and, transitively, every document its ``$ref``s point into, read
    breadth first (each at its fewest hops from the root), within ``limits``."""
    limits = limits or DocumentLimits()
    deadline = deadline or limits.deadline()
    documents = Documents(root)
    # (a document, its hops from the root, the document and $ref that named it)
    waiting: deque[tuple[str, int, str]] = deque([(root, 0, "")])
    queued = {root}
    while waiting:
        uri, depth, named_by = waiting.popleft()
        _may_read(uri, root, depth, len(documents.by_uri), limits, named_by)
        deadline.check("reading the documents")
        raw = await _read(fetch, uri, named_by)
        documents.raw_bytes += len(raw)
        if documents.raw_bytes > limits.max_bytes:
            raise DocumentError(
                f"the documents are larger than {limits.max_bytes} bytes in all "
                "(TOOLREACH_SOURCE_MAX_BYTES)"
            )
        document = parse_document(raw, uri)
        documents.by_uri[uri] = document
        for ref in iter_refs(document):
            target = split_ref(ref, uri)[0]
            if target not in queued:
                queued.add(target)
                waiting.append((target, depth + 1, f"{display(uri)} ($ref {ref!r})"))
    return documents


def _may_read(
    uri: str, root: str, depth: int, loaded: int, limits: DocumentLimits, named_by: str
) -> None:
    """Refuse a document outside the root's folder or origin, or past the limits."""
    if not may_load(uri, root):
        raise DocumentError(
            f"{named_by} points to {display(uri)}, outside the document's "
            + ("folder" if root.startswith("file:") else "origin")
        )
    if loaded >= limits.max_documents:
        raise DocumentError(
            f"the document's $refs reach more than {limits.max_documents} documents "
            "(TOOLREACH_SOURCE_MAX_DOCUMENTS)"
        )
    if depth > limits.max_depth:
        raise DocumentError(
            f"{named_by} is more than {limits.max_depth} $ref hops from the root document "
            "(TOOLREACH_SOURCE_MAX_DEPTH)"
        )


async def _read(fetch: Fetch, uri: str, named_by: str) -> bytes:
    try:
        return await fetch(uri)
    except DocumentMissing as exc:
        if not named_by:
            raise
        raise DocumentMissing(f"{exc}, named by {named_by}") from None


async def read_file(uri: str, max_bytes: int = 64 * 1_048_576) -> bytes:
    """A file's bytes, for ``load_documents``."""
    path = Path(url2pathname(urlsplit(uri).path))
    try:
        if path.stat().st_size > max_bytes:
            raise DocumentError(f"{path}: larger than {max_bytes} bytes")
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        raise DocumentMissing(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DocumentMissing(f"{path}: a directory, not a file") from None
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read: {exc.strerror or exc}") from None
