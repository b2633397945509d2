"""Typed dependencies, declared once: the committing session, one per part, the rights.

Parts: the lifespan builds every part once (app/services.py ``build_services``) and keeps
them on ``app.state.services``; an endpoint names the parts it uses (``IndexDep``,
``ExecutorDep``, ``GatewayDep``, ``LearningDep``, ...), never the whole ``Services``, so its
signature says what it touches and a test can swap one part (``dependency_overrides``).

Rights: a bearer key is resolved (``identify``) into a ``Caller`` (app/keys/scope.py): its
role and, for a key limited to namespaces, its scope. Every surface then applies the scope
through the caller (``Caller.in_scope``, ``require_namespace``, or its ``namespaces`` handed
to the service), so a key never sees another namespace by any path.

The dependencies that only read memory (the parts, the caller's rights) are ``async``:
FastAPI runs them on the event loop, where a plain ``def`` would cost each request one more
trip through the thread pool. The session, which talks to the database, stays a thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from app.advice.room import AdviceRoom
from app.db import SessionFactory, unit_of_work
from app.db_health import DatabaseHealth
from app.embedding.batching import BatchingEncoder
from app.errors import Forbidden, Unauthorized
from app.gateway.service import Gateway
from app.keys.scope import Caller, require_namespace
from app.keys.store import KeyStore
from app.learning.service import LearningCache
from app.limits.limiter import RateLimiter
from app.loop.events import EventWriter
from app.loop.feedback import OtherReplicas
from app.loop.memory import MemoryCache
from app.loop.validation import Guesser, ValidatedCalls
from app.metrics import Metrics
from app.route.executor import RouteExecutor
from app.settings import Settings
from app.sources.service import SourceService
from app.tools.live_index import IndexManager
from app.tools.lookalikes import LookalikeCache

if TYPE_CHECKING:
    from app.services import Services

log = logging.getLogger("toolreach")
_bearer = HTTPBearer(auto_error=False, description="An admin or agent key")
Part = TypeVar("Part")


def part(read: Callable[[Services], Part]) -> Callable[[Request], Coroutine[Any, Any, Part]]:
    """A dependency answering one part of the services the lifespan built."""

    async def dependency(request: Request) -> Part:
        return read(request.app.state.services)

    return dependency


get_settings = part(lambda s: s.settings)
get_sessions = part(lambda s: s.session_factory)
get_health = part(lambda s: s.health)
get_encoder = part(lambda s: s.encoder)
get_index = part(lambda s: s.index)
get_events = part(lambda s: s.events)
get_metrics = part(lambda s: s.metrics)
get_memory = part(lambda s: s.memory)
get_learning = part(lambda s: s.learning)
get_advice = part(lambda s: s.advice)
get_executor = part(lambda s: s.executor)
get_validated = part(lambda s: s.validated)
get_keys = part(lambda s: s.keys)
get_lookalikes = part(lambda s: s.lookalikes)
get_limiter = part(lambda s: s.limiter)
get_sources = part(lambda s: s.sources)
get_gateway = part(lambda s: s.gateway)
get_replicas = part(lambda s: s.replicas)
get_guess = part(lambda s: s.guess)

SettingsDep = Annotated[Settings, Depends(get_settings)]
# The session factory, for work that opens its own units of work (imports, dashboard pages).
SessionsDep = Annotated[SessionFactory, Depends(get_sessions)]
HealthDep = Annotated[DatabaseHealth, Depends(get_health)]
EncoderDep = Annotated[BatchingEncoder, Depends(get_encoder)]
IndexDep = Annotated[IndexManager, Depends(get_index)]
EventsDep = Annotated[EventWriter, Depends(get_events)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
MemoryDep = Annotated[MemoryCache, Depends(get_memory)]
LearningDep = Annotated[LearningCache, Depends(get_learning)]
AdviceDep = Annotated[AdviceRoom, Depends(get_advice)]
# POST /v1/route's queue and worker threads: what routes a step (app/route/executor.py).
ExecutorDep = Annotated[RouteExecutor, Depends(get_executor)]
ValidatedDep = Annotated[ValidatedCalls, Depends(get_validated)]
KeysDep = Annotated[KeyStore, Depends(get_keys)]
LookalikesDep = Annotated[LookalikeCache, Depends(get_lookalikes)]
LimiterDep = Annotated[RateLimiter, Depends(get_limiter)]
SourcesDep = Annotated[SourceService, Depends(get_sources)]
GatewayDep = Annotated[Gateway, Depends(get_gateway)]
# Tools an invented name's words fit, routed as a step, unrecorded (app/route/guess.py).
GuessDep = Annotated[Guesser, Depends(get_guess)]
# Postgres only: feedback for a route another replica answered a moment ago; None on SQLite.
ReplicasDep = Annotated[OtherReplicas | None, Depends(get_replicas)]


def get_session(sessions: SessionsDep, index: IndexDep, keys: KeysDep) -> Iterator[Session]:
    """The request's session: commits when the endpoint returns, before the response is sent.

    This is the one place a request commits; after a commit that changed the registry,
    the in-memory index catches up before the answer goes out (read-your-writes).
    """
    with unit_of_work(sessions) as session:
        yield session
    if revision := session.info.get("registry_revision"):  # a write's registry revision
        try:
            index.sync(at_least=revision)
        except Exception:  # the write landed; the background poll will catch the index up
            log.exception("index sync after a write failed")
    if session.info.get("keys_changed"):
        try:  # a key made or revoked here works, or stops working, here at once
            keys.refresh()
        except Exception:  # the write landed; the background refresh will catch up
            log.exception("key table reload after a write failed")


# scope="function": the commit happens before the response, so a failed commit is an error
# response and never a 2xx for a write that did not land.
SessionDep = Annotated[Session, Depends(get_session, scope="function")]


async def identify(
    keys: KeysDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Caller:
    """The caller a request's bearer key stands for (anonymous without one); Unauthorized for
    a key no one knows. Read from memory only (app/keys/store.py)."""
    if credentials is None or credentials.scheme.lower() != "bearer":
        return Caller("anonymous")
    return keys.caller(credentials.credentials)


CallerDep = Annotated[Caller, Depends(identify)]


async def require_admin(caller: CallerDep) -> Caller:
    """Tool writes are never open: no key is 401, a non-admin key is 403."""
    if caller.role == "anonymous":
        raise Unauthorized("an admin key is required: Authorization: Bearer <key>")
    if caller.role != "admin":
        raise Forbidden("this key may not write tools; an admin key is required")
    return caller


async def require_agent(caller: CallerDep, keys: KeysDep) -> Caller:
    """Agent endpoints: an agent or admin key; open while no key is an agent key and none is
    scoped (environment and table alike: app/keys/store.py, ``KeyTable``)."""
    if caller.role == "anonymous" and not keys.open_to_anonymous:
        raise Unauthorized("an agent key is required: Authorization: Bearer <key>")
    if caller.role == "dashboard":
        raise Forbidden("a dashboard key is read-only: it may only see stats and the dashboard")
    return caller


async def require_viewer(caller: CallerDep) -> Caller:
    """Statistics and the dashboard: an admin or a read-only dashboard key, never open."""
    if caller.role == "anonymous":
        raise Unauthorized("an admin or dashboard key is required: Authorization: Bearer <key>")
    if caller.role not in ("admin", "dashboard"):
        raise Forbidden("this key may not see statistics; an admin or dashboard key is required")
    return caller


def unscoped_admin(caller: Caller, what: str) -> Caller:
    """An admin key limited to no namespace, to manage ``what``; 401 without a key, else 403."""
    if caller.role == "anonymous":
        raise Unauthorized("an admin key is required: Authorization: Bearer <key>")
    if caller.role != "admin" or caller.scoped:
        raise Forbidden(f"only an admin key limited to no namespace may manage {what}")
    return caller


async def require_key_admin(caller: CallerDep) -> Caller:
    """``/v1/keys``: an admin key limited to no namespace (a scoped admin could otherwise make
    itself a key that sees everything)."""
    return unscoped_admin(caller, "keys")


async def require_unscoped_admin(caller: CallerDep) -> Caller:
    """What writes into any namespace it names (``/v1/sources``): an admin key limited to
    none, since a source's tools could land outside a scope."""
    return unscoped_admin(caller, "sources")


async def require_unscoped_viewer(caller: CallerDep) -> Caller:
    """What covers every namespace at once (``/metrics``): a viewer key limited to none."""
    await require_viewer(caller)
    if caller.scoped:
        raise Forbidden("this covers every namespace; a key limited to none is required")
    return caller


AdminDep = Annotated[Caller, Depends(require_admin)]
KeyAdminDep = Annotated[Caller, Depends(require_key_admin)]
UnscopedAdminDep = Annotated[Caller, Depends(require_unscoped_admin)]
AgentDep = Annotated[Caller, Depends(require_agent)]
ViewerDep = Annotated[Caller, Depends(require_viewer)]

__all__ = [
    "AdminDep",
    "AdviceDep",
    "AgentDep",
    "Caller",
    "CallerDep",
    "EncoderDep",
    "EventsDep",
    "ExecutorDep",
    "GatewayDep",
    "GuessDep",
    "HealthDep",
    "IndexDep",
    "KeyAdminDep",
    "KeysDep",
    "LearningDep",
    "LimiterDep",
    "LookalikesDep",
    "MemoryDep",
    "MetricsDep",
    "ReplicasDep",
    "SessionDep",
    "SessionsDep",
    "SettingsDep",
    "SourcesDep",
    "UnscopedAdminDep",
    "ValidatedDep",
    "ViewerDep",
    "identify",
    "require_agent",
    "require_namespace",
    "require_unscoped_viewer",
    "require_viewer",
]
