"""The caller and the scope rule every surface applies.

A key may be limited to a set of namespaces (its scope). To such a key, a namespace outside
its scope is one that does not exist, whether it exists or not, so no answer tells the two
apart (no oracle):

* an address of one thing (a namespace to route or validate in, a tool, a route id) answers
  404, exactly as for a thing that does not exist;
* a list (the tool list, statistics, look-alikes, the dashboard) leaves the rest out; one
  that names an out-of-scope namespace gets the 404 of a namespace that never held a tool
  (app/tools/namespaces.py; the dashboard shows nothing there);
* a write there is refused (403), whatever exists there.

A request that names no namespace works in the key's namespace when the key has exactly
one, else in ``default``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel

from app.errors import Forbidden
from registry.errors import NotFound

Request = TypeVar("Request", bound=BaseModel)
DEFAULT_NAMESPACE = "default"


def only_namespace(namespaces: Collection[str] | None) -> str | None:
    """The namespace of a scope of exactly one, else None."""
    return next(iter(namespaces)) if namespaces is not None and len(namespaces) == 1 else None


def visible_in(namespaces: Collection[str] | None, candidates: Iterable[str]) -> list[str]:
    """Those of ``candidates`` a scope lets see (None: every one), in their order."""
    return [ns for ns in candidates if namespaces is None or ns in namespaces]


def no_namespace(namespace: str) -> NotFound:
    """The one answer for a namespace out of a key's scope, whether it exists or not."""
    return NotFound(f"no namespace {namespace!r} for this key")


def require_writable(namespace: str, namespaces: Collection[str] | None) -> None:
    """Forbidden if a scope (None: every namespace) does not hold ``namespace``."""
    if namespaces is not None and namespace not in namespaces:
        raise Forbidden(f"this key may not write to namespace {namespace!r}")


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: a role and, for a scoped key, the namespaces it may see."""

    role: str  # "admin", "agent", "dashboard" (read-only viewer) or "anonymous"
    namespaces: frozenset[str] | None = None  # None: every namespace
    key_id: str | None = None  # the key's id ("env-…" for one of the environment)

    @property
    def scoped(self) -> bool:
        return self.namespaces is not None

    def can_see(self, namespace: str) -> bool:
        return self.namespaces is None or namespace in self.namespaces

    def default_namespace(self, named: str | None = None) -> str:
        """``named``; else the key's namespace if it has exactly one; else ``default``."""
        if named is not None:
            return named
        return only_namespace(self.namespaces) or DEFAULT_NAMESPACE

    def namespace_for(self, named: str | None = None) -> str:
        """The namespace a request works in (``default_namespace``); NotFound if the key
        may not see it, the same answer whether it exists or not."""
        namespace = self.default_namespace(named)
        if not self.can_see(namespace):
            raise no_namespace(namespace)
        return namespace

    def in_scope(self, request: Request) -> Request:
        """``request`` (with a ``namespace`` field) in the namespace it works in: the one it
        names, else the key's only one; NotFound outside the key's scope."""
        named = request.namespace if "namespace" in request.model_fields_set else None  # type: ignore[attr-defined]
        namespace = self.namespace_for(named)
        if namespace == request.namespace:  # type: ignore[attr-defined]
            return request
        return request.model_copy(update={"namespace": namespace})


def require_namespace(caller: Caller, namespace: str) -> str:
    """``namespace`` if ``caller`` may see it; else NotFound, as for one that does not exist."""
    if not caller.can_see(namespace):
        raise no_namespace(namespace)
    return namespace
