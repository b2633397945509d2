"""Admin API of the registry: write tools (admin key), read and export them (agent rights)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Response

from app.api.error_handlers import ERROR_SHAPE
from app.deps import AdminDep, AgentDep, ServicesDep, SessionDep
from app.schemas import (
    BulkRequest,
    BulkResult,
    ExportFormat,
    Namespace,
    ToolInput,
    ToolList,
    ToolRead,
)
from app.tools import catalog
from registry import repository
from registry.card import ToolCard
from registry.errors import InvalidInput
from registry.formats import from_card
from registry.repository import StoredCard
from registry.tool_search import DEFERRABLE, deferred

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
    Query(description="the namespace of a card that names none; a card naming another is a 422"),
]


def named(body: dict[str, Any], name: str) -> dict[str, Any]:
    """``body`` with the path's name wherever its format puts a name and it gave none: at the
    top, or in an OpenAI Chat Completions tool's ``function``."""
    item = {"name": name, **body}
    function = body.get("function")
    if body.get("type") == "function" and isinstance(function, dict) and "name" not in function:
        item["function"] = {"name": name, **function}
    return item


def parse_in_namespace(body: dict[str, Any], namespace: str | None) -> ToolCard:
    """The card in ``body``, in ``namespace`` if it names none; InvalidInput if it names
    another (which one was meant cannot be guessed)."""
    card = catalog.parse_card(body, namespace)
    if namespace is not None and card.namespace != namespace:
        raise InvalidInput(
            f"the body names namespace {card.namespace!r} but the query names {namespace!r}"
        )
    return card


def to_read(stored: StoredCard) -> ToolRead:
    return ToolRead(
        **stored.card.model_dump(),
        version=stored.version,
        created_at=stored.created_at,
        updated_at=stored.updated_at,
        deleted=stored.deleted,
    )


@router.post("", status_code=201, response_model=ToolRead, responses=ERRORS)
def create_tool(
    body: ToolBody,
    session: SessionDep,
    services: ServicesDep,
    _admin: AdminDep,
    namespace: NamespaceQuery = None,
) -> ToolRead:
    """Register a new tool; 409 if the name exists in its namespace."""
    card = parse_in_namespace(body, namespace)
    catalog.write_cards(session, services.encoder, [card], create_only=True)
    return to_read(repository.get_card(session, card.namespace, card.name))


@router.post("/bulk", response_model=BulkResult, responses=ERRORS)
def bulk_import(
    request: BulkRequest, session: SessionDep, services: ServicesDep, _admin: AdminDep
) -> BulkResult:
    """Import many tools in any mix of formats: all land, or (on any bad item) none."""
    batch, statuses = catalog.import_items(
        session, services.encoder, request.tools, request.namespace
    )
    if statuses is None:
        raise InvalidInput(
            f"{len(batch.rejects)} of {len(request.tools)} tools are invalid; nothing was written",
            batch.rejects,
        )
    result: dict[str, list[str]] = {"created": [], "updated": [], "unchanged": []}
    for card, status in zip(batch.cards, statuses, strict=True):
        result[status].append(card.name)
    return BulkResult(**result)


@router.put(
    "/{name}",
    response_model=ToolRead,
    responses={201: {"model": ToolRead, "description": "Created: the tool was new"}, **ERRORS},
)
def put_tool(
    name: str,
    body: ToolBody,
    session: SessionDep,
    services: ServicesDep,
    response: Response,
    _admin: AdminDep,
    namespace: NamespaceQuery = None,
) -> ToolRead:
    """Create the tool (201) or add a new version of it (200); unchanged content adds none.

    The body may leave out the name: the path gives it.
    """
    card = parse_in_namespace(named(body, name), namespace)
    if card.name != name:
        raise InvalidInput(f"the body names {card.name!r} but the path names {name!r}")
    [status] = catalog.write_cards(session, services.encoder, [card])
    response.status_code = 201 if status == "created" else 200
    return to_read(repository.get_card(session, card.namespace, card.name))


@router.delete("/{name}", status_code=204, responses=ERRORS)
def delete_tool(
    name: str, session: SessionDep, _admin: AdminDep, namespace: Namespace = "default"
) -> Response:
    """Take a tool out of routing; its versions stay readable with `?version=N`."""
    catalog.delete_card(session, namespace, name)
    return Response(status_code=204)


@router.get("", response_model=ToolList, responses=ERRORS)
def list_tools(
    session: SessionDep,
    _agent: AgentDep,
    namespace: Namespace | None = None,
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
    """List live tools, paged and filtered; `format` exports them for a model API."""
    if defer_loading and format not in DEFERRABLE:
        raise InvalidInput(f"defer_loading=true needs format {' or '.join(DEFERRABLE)}")
    page, total = repository.list_cards(
        session, namespace=namespace, tag=tag, text=text, offset=offset, limit=limit
    )
    items: list[ToolRead] | list[dict[str, Any]]
    if format is None:
        items = [to_read(stored) for stored in page]
    elif defer_loading:
        items = [deferred(from_card(stored.card, format), format) for stored in page]
    else:
        items = [from_card(stored.card, format) for stored in page]
    return ToolList(items=items, total=total, offset=offset, limit=limit, format=format or "native")


@router.get("/{name}", responses=ERRORS)
def get_tool(
    name: str,
    session: SessionDep,
    _agent: AgentDep,
    namespace: Namespace = "default",
    version: Annotated[int | None, Query(ge=1, le=MAX_INT32)] = None,
    format: ExportFormat | None = None,
) -> Any:
    """One tool's current card, or an earlier version; `format` exports it."""
    stored = repository.get_card(session, namespace, name, version)
    return to_read(stored) if format is None else from_card(stored.card, format)
