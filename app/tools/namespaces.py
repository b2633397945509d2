"""Which namespace a request works in, and the one answer for a namespace it cannot use.

A namespace that never held a tool the caller may see is a 404 that names it and offers the
closest namespaces the caller does see (did-you-mean), on every surface that names one: a
route (any ``format``, the platforms' search shapes included), a validation, a call,
``/mcp/<namespace>`` and the MCP meta-tools, ``GET /v1/tools``, ``/v1/stats`` and
``/v1/lookalikes``. A typo (``biling``) is said at once instead of answering an empty list.

A namespace that held tools and holds none now (all deleted, or retired by their source)
still exists: its history stays readable, and a route there answers as one where nothing
fits (200, no candidates), so an agent mid-task meets "nothing fits", not an error.

The scope rule holds (app/keys/scope.py): to a key limited to namespaces, another namespace
is one it never saw a tool in, whether it exists or not, so the answer is word for word that
of a namespace no one ever wrote to, and its did-you-mean lists only the key's own.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TypeVar

from pydantic import BaseModel

from app.keys.scope import Caller
from app.tools.live_index import IndexManager
from registry.calls import did_you_mean
from registry.errors import NotFound

Request = TypeVar("Request", bound=BaseModel)


def known_namespaces(index: IndexManager, visible: Collection[str] | None) -> list[str]:
    """The namespaces that ever held a tool, of those ``visible`` (None: all), sorted."""
    return sorted(ns for ns in index.namespaces() if _sees(visible, ns))


def unknown_namespace(namespace: str, known: list[str]) -> NotFound:
    """The 404 of a namespace that never held a tool, with the closest of ``known``."""
    close = did_you_mean(namespace, known)
    hint = f"; did you mean {', '.join(repr(n) for n in close)}?" if close else ""
    return NotFound(
        f"no tools in namespace {namespace!r}{hint}",
        {"namespace": namespace, "did_you_mean": close},
    )


Named = TypeVar("Named", str, str | None)


def require_known(index: IndexManager, namespace: Named, visible: Collection[str] | None) -> Named:
    """``namespace`` if it ever held a tool the caller (``visible``: its scope) may see (None,
    a filter naming none: itself); else the NotFound of an unknown namespace."""
    if namespace is None or (_sees(visible, namespace) and index.tool_count(namespace) is not None):
        return namespace
    raise unknown_namespace(namespace, known_namespaces(index, visible))


def in_namespace(caller: Caller, request: Request, index: IndexManager) -> Request:
    """``caller.in_scope(request)`` once its namespace (named, else the key's only one, else
    ``default``) is known to the caller; else NotFound, as ``require_known``."""
    fields = request.model_fields_set
    named = request.namespace if "namespace" in fields else None  # type: ignore[attr-defined]
    require_known(index, caller.default_namespace(named), caller.namespaces)
    return caller.in_scope(request)


def _sees(visible: Collection[str] | None, namespace: str) -> bool:
    return visible is None or namespace in visible
