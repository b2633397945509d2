"""/mcp over HTTP: the same keys as /v1, the namespace, then the SDK's stateless transport.

Stateless with JSON responses: every POST is answered on its own, by whichever replica gets
it, so no sticky sessions are needed (Cursor and Claude Code forward no cookies). The session
manager is made in the app's lifespan and runs there (``mcp_sessions``), since a manager runs
once; the routes are added when the app is built and find it on ``app.state``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from fastapi.security import HTTPAuthorizationCredentials
from fastapi.security.utils import get_authorization_scheme_param
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from app.deps import identify, require_agent
from app.mcp.server import SCOPE_KEY, McpScope, build_server
from app.settings import Settings
from app.tools.namespaces import require_known
from registry.card import NAMESPACE_PATTERN
from registry.errors import NotFound

if TYPE_CHECKING:
    from app.services import Services

PATHS = ("/mcp", "/mcp/{namespace}")


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """The Host and Origin checks against DNS rebinding; "*" among the hosts: none."""
    if "*" in settings.mcp_allowed_hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(settings.mcp_allowed_hosts),
        allowed_origins=list(settings.mcp_allowed_origins),
    )


def mcp_sessions(services: Services) -> StreamableHTTPSessionManager:
    """The SDK's session manager for this process: run it (``.run()``) in the lifespan."""
    settings = services.settings
    return StreamableHTTPSessionManager(
        app=build_server(services),
        json_response=True,
        stateless=True,
        security_settings=transport_security(settings),
        max_request_body_size=settings.max_body_bytes,
    )


def _bearer(headers: Headers) -> HTTPAuthorizationCredentials | None:
    """The Authorization header as /v1's dependency reads it (app/deps.py)."""
    scheme, key = get_authorization_scheme_param(headers.get("authorization"))
    return HTTPAuthorizationCredentials(scheme=scheme, credentials=key) if key else None


class McpEndpoint:
    """The ASGI endpoint of /mcp and /mcp/{namespace} (a class: Starlette hands a plain
    function a Request, and the SDK's transport needs the raw scope and channels)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """One MCP request: agent rights as on /v1 (errors rendered like /v1's), the
        namespace from the path (404 if it never held a tool the key may see), else the
        key's, else "default"; then the SDK's transport."""
        state = scope["app"].state
        services: Services = state.services
        credentials = _bearer(Headers(scope=scope))
        caller = await require_agent(await identify(services.keys, credentials), services.keys)
        named = scope.get("path_params", {}).get("namespace")
        if named is None:
            key = credentials.credentials if credentials and caller.role != "anonymous" else ""
            named = services.settings.mcp_key_namespaces.get(key)
        elif not re.fullmatch(NAMESPACE_PATTERN, named):
            raise NotFound(f"{named!r} is not a namespace name")
        else:  # a namespace in the URL unknown to the key: 404, with did-you-mean
            require_known(services.index, named, caller.namespaces)
        # The one scope rule of /v1: a key limited to namespaces gets the same 404 for any
        # other; with none named, a key limited to one works in it, others in "default".
        namespace = caller.namespace_for(named)
        if scope["method"] != "POST":
            # GET would hold an SSE stream open that nothing is ever sent on (no session, no
            # server-initiated messages); DELETE would end a session there is not. MCP lets a
            # server answer both with 405.
            raise HTTPException(405, "/mcp takes POST only: it is stateless", {"Allow": "POST"})
        sessions: StreamableHTTPSessionManager = state.mcp_sessions
        where = McpScope(
            namespace=namespace,
            role=caller.role,
            namespaces=caller.namespaces,
            key_id=caller.key_id,
        )
        scope = {**scope, SCOPE_KEY: where}
        await sessions.handle_request(scope, receive, send)


def mcp_routes() -> list[Route]:
    """/mcp and /mcp/{namespace}, every method (all but POST refused by the endpoint)."""
    endpoint = McpEndpoint()
    return [Route(path, endpoint, include_in_schema=False) for path in PATHS]
