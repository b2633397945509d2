"""Admin API of the registry: write tools (admin key), read and export them (agent rights).

A key limited to namespaces reads only those (another namespace's tool is the 404 of a tool
that does not exist) and, an admin key, writes only those (403 elsewhere); with no
namespace, a key limited to one works in that one (app/keys/scope.py)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute
from starlette.routing import Match
from starlette.types import Scope

from app.api.error_handlers import ERROR_SHAPE
from app.capacity.slots import ExportSlot, ImportSlot
from app.deps import (
    AdminDep,
    AgentDep,
    EncoderDep,
    IndexDep,
    SessionDep,
    SessionsDep,
    SettingsDep,
)
from app.schemas import (
    BulkRequest,
    BulkResult,
    CardWarning,
    ExportFormat,
    Namespace,
    ToolInput,
    ToolList,
    ToolRead,
    ToolWarning,
    ToolWritten,
    tool_in_format,
)
from app.tools import service as tools
from app.tools.card_lint import card_warnings
from app.tools.live_index import IndexManager
from app.tools.namespaces import require_known

router = APIRouter(prefix="/v1/tools", tags=["tools"])

# Past any registry's size, and within the 32-bit integers of the version column and of every
# database's OFFSET (an offset past SQLite's 64-bit integers, a version past Postgres's
# integer, were 500s).
MAX_INT32 = 2**31 - 1

ERRORS: dict[int | str, dict[str, Any]] = {
    code: ERROR_SHAPE for code in (400, 401, 403, 404, 409, 413, 422, 503)
}
ToolBody = Annotated[
    ToolInput,
    Body(
        description="A native tool card, or an OpenAI, Anthropic or MCP tool (detected).",
        examples=[
            {
                "name": "get_weather",
                "description": "Current weather for a city. Use for now, not for forecasts.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            }
        ],
    ),
]
NamespaceQuery = Annotated[
    Namespace | None,
    Query(
        description=(
            "the namespace of a card that names none (none given: the key's only namespace, "
            "else default); a card naming another is a 422"
        )
    ),
]
# A read's namespace filter (stats, look-alikes, the tool list).
KeyNamespaces = Annotated[
    Namespace | None,
    Query(description="every namespace of the key if absent; one that never held a tool: 404"),
]
OneNamespace = Annotated[
    Namespace | None,
    Query(description="default: the key's only namespace if it is limited to one, else default"),
]


def written(stored: Any, index: IndexManager) -> ToolWritten:
    """The answer to a write: the card as stored (a ``StoredCard``), and what the lint found
    in it."""
    [found] = card_warnings(index, [stored.card])
    warnings = [CardWarning(code=w.code, message=w.message) for w in found]
    return ToolWritten(**ToolRead.from_stored(stored).model_dump(), warnings=warnings)


@router.post("", status_code=201, response_model=ToolWritten, responses=ERRORS)
def create_tool(
    body: ToolBody,
    session: SessionDep,
    sessions: SessionsDep,
    encoder: EncoderDep,
    index: IndexDep,
    admin: AdminDep,
    namespace: NamespaceQuery = None,
) -> ToolWritten:
    """Register a new tool; 409 if the name exists in its namespace. ``warnings``: what the
    lint found in the card (docs/API.md, "The lint of a card")."""
    stored = tools.create_tool(
        session, encoder, body, namespace, admin.namespaces, sessions=sessions
    )
    return written(stored, index)


BULK_PATH = "/v1/tools/bulk"
NDJSON = "application/x-ndjson"


class NdjsonOnly(APIRoute):
    """A route for NDJSON bodies only: it stands before the JSON route of the same path,
    which takes every other request."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        content_type = dict(scope.get("headers", ())).get(b"content-type", b"")
        if content_type.split(b";")[0].strip().lower() != NDJSON.encode():
            return Match.NONE, {}
        return match, child


async def bulk_import_ndjson(
    http: Request,
    sessions: SessionsDep,
    encoder: EncoderDep,
    index: IndexDep,
    settings: SettingsDep,
    admin: AdminDep,
    _slot: ImportSlot,
    namespace: NamespaceQuery = None,
) -> Response:
    """Import tools streamed one a line (any mix of formats), parsed as they arrive: all
    land, or (on any bad line) none. With ``Accept: application/x-ndjson``, progress lines
    as it goes and the result last (app/tools/imports.py)."""
    job = tools.start_import(
        sessions, encoder, namespace, admin.namespaces, settings.max_body_bytes
    )
    try:
        async for chunk in http.stream():
            if chunk:
                await run_in_threadpool(job.feed, chunk)
        await run_in_threadpool(job.finish)
    except BaseException:
        job.embedding.close()
        raise
    if NDJSON in http.headers.get("accept", ""):
        lines = tools.import_progress(job, index)
        return StreamingResponse(lines, media_type=NDJSON)
    names = await run_in_threadpool(tools.run_import, job, index)
    return JSONResponse(BulkResult(**names).model_dump())


router.add_api_route(
    "/bulk",
    bulk_import_ndjson,
    methods=["POST"],
    include_in_schema=False,  # documented with the JSON route, whose path it shares
    route_class_override=NdjsonOnly,
)
NDJSON_BODY = {
    "description": (
        "One tool a line, in any format: no size limit but TOOLREACH_MAX_IMPORT_BYTES (each "
        "line TOOLREACH_MAX_BODY_BYTES). With Accept: application/x-ndjson the answer is "
        'progress lines ({"stage": "parsed" | "embedded" | "written", ...}) and then '
        '{"result": ...} or {"error": ...}.'
    ),
    "schema": {"type": "string"},
}


@router.post(
    "/bulk",
    response_model=BulkResult,
    responses=ERRORS,
    openapi_extra={"requestBody": {"content": {NDJSON: NDJSON_BODY}}},
)
def bulk_import(
    request: BulkRequest,
    session: SessionDep,
    sessions: SessionsDep,
    encoder: EncoderDep,
    index: IndexDep,
    admin: AdminDep,
    _slot: ImportSlot,
) -> BulkResult:
    """Import many tools in any mix of formats: all land, or (on any bad item) none. A body
    over the JSON limit: send one tool a line as ``application/x-ndjson`` (streamed)."""
    names, found = tools.import_tools(
        session,
        encoder,
        request.tools,
        request.namespace,
        admin.namespaces,
        sessions=sessions,
        index=index,
    )
    warnings = [ToolWarning(tool=tool, code=w.code, message=w.message) for tool, w in found]
    return BulkResult(**names, warnings=warnings)


@router.put(
    "/{name}",
    response_model=ToolWritten,
    responses={201: {"model": ToolWritten, "description": "Created: the tool was new"}, **ERRORS},
)
def put_tool(
    name: str,
    body: ToolBody,
    session: SessionDep,
    sessions: SessionsDep,
    encoder: EncoderDep,
    index: IndexDep,
    response: Response,
    admin: AdminDep,
    namespace: NamespaceQuery = None,
) -> ToolWritten:
    """Create the tool (201) or add a new version of it (200); unchanged content adds none.

    The body may leave out the name: the path gives it.
    """
    stored, status = tools.put_tool(
        session, encoder, name, body, namespace, admin.namespaces, sessions=sessions
    )
    response.status_code = 201 if status == "created" else 200
    return written(stored, index)


@router.delete("/{name}", status_code=204, responses=ERRORS)
def delete_tool(
    name: str, session: SessionDep, admin: AdminDep, namespace: OneNamespace = None
) -> Response:
    """Take a tool out of routing; its versions stay readable with `?version=N`."""
    tools.delete_tool(session, admin.default_namespace(namespace), name, admin.namespaces)
    return Response(status_code=204)


@router.get("", response_model=ToolList, responses=ERRORS)
def list_tools(
    session: SessionDep,
    index: IndexDep,
    agent: AgentDep,
    _slot: ExportSlot,
    namespace: KeyNamespaces = None,
    tag: Annotated[
        str | None,
        Query(max_length=64, pattern=r"^[^|]*$", description="tools with this tag (any case)"),
    ] = None,
    text: Annotated[str | None, Query(max_length=200, description="in name or summary")] = None,
    offset: Annotated[int, Query(ge=0, le=MAX_INT32)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    format: ExportFormat | None = None,
    defer_loading: Annotated[
        bool,
        Query(
            description=(
                "with format anthropic or openai_responses: each tool marked defer_loading, "
                "to declare a whole namespace for the platform's own tool search"
            )
        ),
    ] = False,
) -> ToolList:
    """List live tools, paged and filtered; `format` exports them for a model API (`native`,
    as no format: the stored cards). A `namespace` that never held a tool the key may see is
    a 404 naming it, with did-you-mean."""
    page, total = tools.list_tools(
        session,
        namespace=require_known(index, namespace, agent.namespaces),
        tag=tag,
        text=text,
        offset=offset,
        limit=limit,
        format=format,
        defer_loading=defer_loading,
        visible=agent.namespaces,
    )
    return ToolList.from_page(
        page, total, offset=offset, limit=limit, format=format, defer_loading=defer_loading
    )


@router.get("/{name}", responses=ERRORS)
def get_tool(
    name: str,
    session: SessionDep,
    agent: AgentDep,
    namespace: OneNamespace = None,
    version: Annotated[int | None, Query(ge=1, le=MAX_INT32)] = None,
    format: ExportFormat | None = None,
) -> Any:
    """One tool's current card, or an earlier version; `format` exports it (`native`, as no
    format: the stored card)."""
    where = agent.default_namespace(namespace)
    return tool_in_format(tools.read_tool(session, where, name, version, agent.namespaces), format)
