"""Typed dependencies, declared once: the committing session, the services, the rights.

The dependencies that only read memory (the services, the caller's rights) are ``async``:
FastAPI runs them on the event loop, where a plain ``def`` would cost each request one more
trip through the thread pool. The session, which talks to the database, stays a thread.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from app.db import unit_of_work
from app.errors import Forbidden, Unauthorized

if TYPE_CHECKING:
    from app.services import Services

log = logging.getLogger("toolreach")
_bearer = HTTPBearer(auto_error=False, description="An admin or agent key")


async def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated["Services", Depends(get_services)]


def get_session(services: ServicesDep) -> Iterator[Session]:
    """The request's session: commits when the endpoint returns, before the response is sent.

    This is the one place a request commits; after a commit that changed the registry,
    the in-memory index catches up before the answer goes out (read-your-writes).
    """
    with unit_of_work(services.session_factory) as session:
        yield session
    if session.info.get("registry_changed"):
        try:
            services.index.sync()
        except Exception:  # the write landed; the background poll will catch the index up
            log.exception("index sync after a write failed")


# scope="function": the commit happens before the response, so a failed commit is an error
# response and never a 2xx for a write that did not land.
SessionDep = Annotated[Session, Depends(get_session, scope="function")]


@dataclass(frozen=True, slots=True)
class Caller:
    role: str  # "admin", "agent", "dashboard" (read-only viewer) or "anonymous"


def _matches(key: str, keys: tuple[str, ...]) -> bool:
    """Constant-time comparison against every configured key (no early exit)."""
    found = False
    for candidate in keys:
        found |= hmac.compare_digest(key.encode(), candidate.encode())
    return found


async def identify(
    services: ServicesDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Caller:
    settings = services.settings
    if credentials is None or credentials.scheme.lower() != "bearer":
        return Caller("anonymous")
    key = credentials.credentials
    if _matches(key, settings.admin_keys):
        return Caller("admin")
    if _matches(key, settings.agent_keys):
        return Caller("agent")
    if _matches(key, settings.dashboard_keys):
        return Caller("dashboard")
    raise Unauthorized("unknown API key")


CallerDep = Annotated[Caller, Depends(identify)]


async def require_admin(caller: CallerDep) -> Caller:
    """Tool writes are never open: no key is 401, a non-admin key is 403."""
    if caller.role == "anonymous":
        raise Unauthorized("an admin key is required: Authorization: Bearer <key>")
    if caller.role != "admin":
        raise Forbidden("this key may not write tools; an admin key is required")
    return caller


async def require_agent(caller: CallerDep, services: ServicesDep) -> Caller:
    """Agent endpoints: open when no agent keys are set, else an agent or admin key."""
    if caller.role == "anonymous" and services.settings.agent_keys:
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


AdminDep = Annotated[Caller, Depends(require_admin)]
AgentDep = Annotated[Caller, Depends(require_agent)]
ViewerDep = Annotated[Caller, Depends(require_viewer)]
