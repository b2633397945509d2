"""API request and response schemas (separate from the tables and from the card itself)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from app.routing.window import window_bounds
from registry.card import NAME_PATTERN, NAMESPACE_PATTERN, ErrorEntry, SourceRef, ToolCard
from registry.formats import from_card, json_kind
from registry.nul import NoNul
from registry.tool_search import deferred, openai_namespaces

if TYPE_CHECKING:
    from registry.repository import StoredCard

Namespace = Annotated[str, Field(pattern=NAMESPACE_PATTERN)]
_ISO_DATE_START = re.compile(r"\d{4}-\d{2}-\d{2}")


def _iso_time(value: Any) -> Any:
    """Only ISO 8601 (a date, or a date and time): pydantic also read any number as seconds
    since 1970, so ``until=0.5`` was a time and a typo a silently empty window."""
    if isinstance(value, str) and not _ISO_DATE_START.match(value):
        raise PydanticCustomError(
            "iso_time", "expected an ISO 8601 date or time, e.g. 2026-12-01T09:30:00Z"
        )
    return value


# A time in a query: ISO 8601, UTC unless it carries an offset; a date alone is its midnight.
IsoTime = Annotated[datetime, BeforeValidator(_iso_time)]
ToolName = Annotated[str, Field(pattern=NAME_PATTERN)]
# How a tool is answered: native is the stored card with its version and times (also what no
# format gives); the others are the tool as that model API takes it.
ExportFormat = Literal["native", "openai", "openai_responses", "anthropic", "mcp"]
# What a route's `tools` hold: tool definitions in a model API's format, or the result that
# the platform's own tool search expects (registry/tool_search.py).
RouteFormat = Literal[
    "raw",
    "openai",
    "openai_responses",
    "anthropic",
    "mcp",
    "openai_tool_search",
    "anthropic_tool_reference",
]


class Strict(NoNul):
    model_config = ConfigDict(extra="forbid")


class ToolRead(BaseModel):
    """A stored tool card with its version and timestamps."""

    name: str
    namespace: str
    summary: str
    title: str | None = None
    description: str
    parameters: dict[str, Any]
    returns: dict[str, Any] | None
    errors: list[ErrorEntry]
    tags: list[str]
    examples: list[str]
    pinned: bool
    annotations: dict[str, Any] | None = None
    source: SourceRef | None = Field(
        default=None, description="the registered source the tool was read from (/v1/sources)"
    )
    version: int
    created_at: datetime
    updated_at: datetime
    deleted: bool = False

    @classmethod
    def from_stored(cls, stored: StoredCard) -> ToolRead:
        """The native answer for a stored card: its content, version and times."""
        return cls(
            **stored.card.model_dump(),
            version=stored.version,
            created_at=stored.created_at,
            updated_at=stored.updated_at,
            deleted=stored.deleted,
        )


class CardWarning(BaseModel):
    """A flaw the lint found in a written card (registry/lint.py; codes: docs/API.md)."""

    code: str
    message: str


class ToolWarning(CardWarning):
    tool: str


class ToolWritten(ToolRead):
    """A card as written, with what the lint found in it (the write landed regardless)."""

    warnings: list[CardWarning] = Field(default_factory=list)


def tool_in_format(stored: StoredCard, format: ExportFormat | None) -> ToolRead | dict[str, Any]:
    """One tool as ``GET /v1/tools/{name}`` answers it: native (no format) or exported."""
    if format is None or format == "native":
        return ToolRead.from_stored(stored)
    return from_card(stored.card, format)


class ToolList(BaseModel):
    """One page of tools: native cards, or tools in the requested format."""

    items: list[ToolRead] | list[dict[str, Any]]
    total: int
    offset: int
    limit: int
    format: ExportFormat = "native"

    @classmethod
    def from_page(
        cls,
        page: list[StoredCard],
        total: int,
        *,
        offset: int,
        limit: int,
        format: ExportFormat | None,
        defer_loading: bool = False,
    ) -> ToolList:
        """The page in ``format`` (no format: native cards); ``defer_loading`` marks each
        definition for the platform's own tool search (registry/tool_search.py)."""
        items: list[ToolRead] | list[dict[str, Any]]
        if format is None or format == "native":
            items = [ToolRead.from_stored(stored) for stored in page]
        elif defer_loading and format == "openai_responses":  # grouped, where OpenAI saves
            items = openai_namespaces([stored.card for stored in page])
        elif defer_loading:
            items = [deferred(from_card(stored.card, format), format) for stored in page]
        else:
            items = [from_card(stored.card, format) for stored in page]
        return cls(items=items, total=total, offset=offset, limit=limit, format=format or "native")


class OpenAIFunction(BaseModel):
    """The ``function`` of an OpenAI Chat Completions tool."""

    model_config = ConfigDict(extra="allow", title="OpenAI function")

    name: str = Field(pattern=NAME_PATTERN)
    description: str = Field(min_length=1, max_length=8000)
    parameters: dict[str, Any] | None = Field(
        default=None, description="JSON Schema of the arguments; none: no arguments"
    )


class OpenAIChatTool(BaseModel):
    """An OpenAI Chat Completions function tool, as sent in ``tools``; other keys (e.g.
    ``strict``) are accepted and not stored."""

    model_config = ConfigDict(extra="allow", title="OpenAI tool (Chat Completions)")

    type: Literal["function"]
    function: OpenAIFunction


class OpenAIResponsesTool(BaseModel):
    """An OpenAI Responses API function tool (the flat form); other keys are not stored."""

    model_config = ConfigDict(extra="allow", title="OpenAI tool (Responses)")

    type: Literal["function"]
    name: str = Field(pattern=NAME_PATTERN)
    description: str = Field(min_length=1, max_length=8000)
    parameters: dict[str, Any] | None = None


class AnthropicTool(BaseModel):
    """An Anthropic Messages API tool; other keys (e.g. ``cache_control``) are not stored."""

    model_config = ConfigDict(extra="allow", title="Anthropic tool")

    name: str = Field(pattern=NAME_PATTERN)
    description: str = Field(min_length=1, max_length=8000)
    input_schema: dict[str, Any]


class MCPTool(BaseModel):
    """An MCP tool as ``tools/list`` returns it. Its title (or ``annotations.title``) becomes
    the card's summary, and stands in for a missing description; ``outputSchema`` becomes
    ``returns``; the title and annotations are kept and exported again."""

    model_config = ConfigDict(extra="allow", title="MCP tool")

    name: str = Field(pattern=NAME_PATTERN)
    title: str | None = None
    description: str | None = Field(
        default=None, description="required unless the tool has a title"
    )
    inputSchema: dict[str, Any]
    outputSchema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None


def _tool_object(value: Any) -> dict[str, Any]:
    """Only the JSON-object check here: each item is parsed, in whichever format it is, and
    its problems reported together by the import (app/tools/catalog.py)."""
    if not isinstance(value, dict):
        raise PydanticCustomError(
            "tool_object", "a tool must be a JSON object, not {kind}", {"kind": json_kind(value)}
        )
    return value


ToolInput = Annotated[
    dict[str, Any],
    PlainValidator(
        _tool_object,
        # What the OpenAPI document shows: each format the service detects.
        json_schema_input_type=ToolCard
        | OpenAIChatTool
        | OpenAIResponsesTool
        | AnthropicTool
        | MCPTool,
    ),
]
"""A tool in any format the service reads (registry/formats.py), checked to be an object."""


class BulkRequest(Strict):
    tools: list[ToolInput] = Field(
        min_length=1,
        max_length=20_000,
        description=(
            "Native tool cards, or OpenAI, Anthropic or MCP tools, in any mix (each one's "
            "format detected). All land, or on any bad item none, and the answer lists the "
            "bad ones."
        ),
        examples=[
            [
                {"name": "get_weather", "description": "Current weather for a city."},
                {
                    "type": "function",
                    "function": {
                        "name": "send_email",
                        "description": "Send an email.",
                        "parameters": {
                            "type": "object",
                            "properties": {"to": {"type": "string"}},
                            "required": ["to"],
                        },
                    },
                },
            ]
        ],
    )
    namespace: Namespace | None = Field(
        default=None,
        description=(
            "the namespace of each tool that names none; a tool naming its own keeps it "
            "(an export of several namespaces imports as it was)"
        ),
    )


class BulkResult(BaseModel):
    created: list[str]
    updated: list[str]
    unchanged: list[str]
    warnings: list[ToolWarning] = Field(
        default_factory=list, description="what the lint found in the cards written"
    )


class ValidateRequest(Strict):
    name: Annotated[str, Field(min_length=1, max_length=256)]
    arguments: dict[str, Any] = Field(default_factory=dict)
    namespace: Namespace = "default"
    route_id: Annotated[str, Field(min_length=1, max_length=64)] | None = None


class CallProblem(BaseModel):
    path: str
    message: str
    suggestion: str | None = None


class ValidateResult(BaseModel):
    valid: bool
    errors: list[CallProblem]
    did_you_mean: list[str]


class RouteRequest(Strict):
    """One step of an agent's task."""

    query: Annotated[
        str,
        Field(
            min_length=1,
            description=(
                "the step, in words; any length the body limit allows, a long one read "
                'through a window (docs/ROUTING.md, "Long steps")'
            ),
        ),
    ]
    k: Annotated[int, Field(ge=1, le=50)] = 3
    namespace: Namespace = "default"
    context: dict[str, Any] = Field(
        default_factory=dict, description="argument values the agent already knows"
    )
    tags: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(
        default=None, max_length=32, description="only tools carrying all of these tags"
    )
    min_score: float | None = Field(
        default=None,
        allow_inf_nan=False,  # NaN (which json accepts) silently removed every candidate
        description="drop candidates scoring below",
    )
    min_confidence: float | None = Field(
        default=None,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description=(
            "drop candidates whose confidence is below this (0 to 1); when none reaches it "
            "the answer is empty with fit 'none'. docs/ROUTING.md gives the recommended value"
        ),
    )
    format: RouteFormat = Field(
        default="raw",
        description=(
            "raw: no schemas; openai, openai_responses, anthropic, mcp: the tools' definitions; "
            "openai_tool_search: one tool_search_output item answering `call_id`; "
            "anthropic_tool_reference: tool_reference blocks for a tool_result"
        ),
    )
    call_id: Annotated[str, Field(min_length=1, max_length=256)] | None = Field(
        default=None,
        description="with format openai_tool_search (only): the tool_search_call's call_id",
    )
    split: StrictBool = Field(
        default=True,
        description=(
            "read a step that asks for several things as its parts and cover each part "
            "before a second tool for any of them (the answer's `parts`); false reads the "
            "step as one request, for an agent that plans its own steps"
        ),
    )

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        """A step of only whitespace says nothing to route, as an empty one."""
        if not value.strip():
            raise PydanticCustomError("blank_query", "the step holds only whitespace")
        return value

    @field_validator("k", "min_score", "min_confidence", mode="before")
    @classmethod
    def _json_number(cls, value: Any) -> Any:
        """A JSON number (3 or 3.0), not a string or a boolean that pydantic would convert."""
        if isinstance(value, str | bool):
            raise PydanticCustomError("json_number", "must be a JSON number")
        return value

    @model_validator(mode="after")
    def _call_id_with_tool_search(self) -> RouteRequest:
        """A tool_search_output answers one call: its id is needed, and means nothing else."""
        if self.format == "openai_tool_search" and self.call_id is None:
            raise ValueError("format openai_tool_search needs the tool_search_call's call_id")
        if self.call_id is not None and self.format != "openai_tool_search":
            raise ValueError("call_id is only allowed with format openai_tool_search")
        return self


class InvalidContext(BaseModel):
    """A context value that breaks its parameter's JSON Schema, and so does not count."""

    parameter: str
    reason: str = Field(description="the JSON Schema error, e.g. 'banana' does not match …")


class RouteCandidate(BaseModel):
    name: str
    summary: str
    score: float = Field(
        description="relative: the best tool's relevance is 1.0 whatever the step; it ranks"
    )
    stages: dict[str, float] = Field(description="each stage's additive part of the score")
    confidence: float = Field(
        ge=0,
        le=1,
        description=(
            "absolute: the estimated chance that this is the tool the step needs, calibrated "
            "(of the candidates shown with confidence near p, about a share p are the tool "
            "used); between 0.001 and 0.999. Low for every candidate means nothing here fits"
        ),
    )
    missing_required: list[str] = Field(
        description=(
            "required parameters with no value in the step or the context; naming a "
            'parameter is not giving it a value (docs/ROUTING.md, "missing_required")'
        )
    )
    invalid_context: list[InvalidContext] = Field(
        default_factory=list,
        description=(
            "context values that break their parameter's schema, and why: such a parameter "
            "is in missing_required unless the step holds a value for it"
        ),
    )
    part: int | None = Field(
        default=None,
        description=(
            "only when the step was read as several parts: the part this tool serves best "
            "(its index in the answer's `parts`, from 0)"
        ),
    )


class TokenEstimate(BaseModel):
    returned: int
    namespace_total: int
    saved: int
    method: str


class StepRead(BaseModel):
    """The part of a long step the router read: its first ``head`` and last ``tail``
    characters of ``characters`` (docs/ROUTING.md, "Long steps")."""

    characters: int
    head: int
    tail: int

    @classmethod
    def of(cls, step: str) -> StepRead | None:
        """What the router reads of ``step``; ``None`` when it reads all of it."""
        bounds = window_bounds(step)
        return None if bounds is None else cls(characters=len(step), head=bounds[0], tail=bounds[1])


class RouteResponse(BaseModel):
    route_id: str
    namespace: str
    model: str
    fit: Literal["ok", "none"] = Field(
        description=(
            "'ok': there are candidates; 'none': the answer is empty because nothing here fits "
            "— no candidate reached min_confidence or min_score, or no tool of the namespace "
            "(with the tags asked for) is there to route to"
        )
    )
    candidates: list[RouteCandidate]
    step_read: StepRead | None = Field(
        default=None,
        description="only for a step longer than the router reads whole: the part it read",
    )
    parts: list[str] | None = Field(
        default=None,
        description=(
            "only when the step was read as several requests: each part as read, in order; "
            'the candidates cover the parts first (docs/ROUTING.md, "Steps of several parts")'
        ),
    )
    tools: list[dict[str, Any]] | None = None
    tool_names: dict[str, str] | None = Field(
        default=None,
        description=(
            "when a tool's name had to change to fit the format (e.g. '.' or ':' for OpenAI): "
            "each exported name and the tool's own; /v1/validate and /v1/feedback accept both"
        ),
    )
    tokens: TokenEstimate | None = None


# Steps one batch may hold (openclaw's tool search caps its queries at 16).
MAX_BATCH_STEPS = 16


class RouteBatchRequest(Strict):
    """Several steps at once: each is routed, answered and recorded on its own."""

    steps: list[RouteRequest] = Field(
        min_length=1,
        max_length=MAX_BATCH_STEPS,
        description=f"the steps, each a route request (1 to {MAX_BATCH_STEPS})",
    )


class RouteBatchResponse(BaseModel):
    answers: list[RouteResponse] = Field(
        description="one answer per step, in the order of the steps, each with its route_id"
    )


Outcome = Literal["success", "error", "unknown"]
Verdict = Literal["hit_at_1", "hit_at_k", "miss", "none_fit"]


class FeedbackRequest(Strict):
    """What the agent really called after a route, and how it went."""

    route_id: Annotated[str, Field(min_length=1, max_length=64)]
    chosen: Annotated[str, Field(min_length=1, max_length=256)] | None = Field(
        description="the tool really called; null: none of the candidates fit"
    )
    outcome: Outcome = "unknown"
    error_code: Annotated[str, Field(min_length=1, max_length=128)] | None = Field(
        default=None, description="the tool's error code, with outcome 'error' only"
    )

    @model_validator(mode="after")
    def _error_code_needs_error(self) -> FeedbackRequest:
        if self.error_code is not None and self.outcome != "error":
            raise ValueError("error_code is only allowed with outcome 'error'")
        return self


class FeedbackRead(BaseModel):
    """The feedback recorded for a route; `verdict` says how the route did."""

    route_id: str
    namespace: str
    chosen: str | None
    outcome: Outcome
    error_code: str | None
    rank: int | None = Field(description="position of `chosen` among the candidates, from 1")
    verdict: Verdict
    from_validate: bool
    created_at: datetime
    updated_at: datetime
