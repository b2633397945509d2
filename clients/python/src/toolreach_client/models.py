"""The service's requests and answers, typed after its OpenAPI document (``/openapi.json``).

Answers accept fields this version does not know yet (``extra="allow"``), so a newer server
does not break an older client; requests are checked before they are sent.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolreach_client.errors import ToolCallError

RouteFormat = Literal[
    "raw",
    "openai",
    "openai_responses",
    "anthropic",
    "mcp",
    "openai_tool_search",
    "anthropic_tool_reference",
]
ExportFormat = Literal["native", "openai", "openai_responses", "anthropic", "mcp"]
Outcome = Literal["success", "error", "unknown"]
Verdict = Literal["hit_at_1", "hit_at_k", "miss", "none_fit"]


class Answer(BaseModel):
    model_config = ConfigDict(extra="allow")


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def body(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class RouteRequest(Request):
    query: str = Field(min_length=1)
    k: int = Field(default=3, ge=1, le=50)
    namespace: str | None = None
    context: dict[str, Any] | None = None
    tags: list[str] | None = None
    min_score: float | None = None
    min_confidence: float | None = Field(default=None, ge=0, le=1)
    format: RouteFormat = "raw"
    call_id: str | None = None
    split: bool | None = None  # None: the service's default (read a step as its parts)


class RouteBatchRequest(Request):
    steps: list[RouteRequest] = Field(min_length=1, max_length=16)


class Candidate(Answer):
    name: str
    summary: str
    score: float
    stages: dict[str, float]
    confidence: float | None = None  # calibrated: the chance this is the tool (None: older server)
    missing_required: list[str]
    part: int | None = None  # the step's part it serves best (a step read as several parts)


class TokenEstimate(Answer):
    returned: int
    namespace_total: int
    saved: int
    method: str


class RouteAnswer(Answer):
    route_id: str
    namespace: str
    model: str
    fit: Literal["ok", "none"] = "ok"  # "none": nothing reached min_confidence
    candidates: list[Candidate]
    parts: list[str] | None = None  # the step's parts as read, when it asked for several things
    tools: list[dict[str, Any]] | None = None
    tool_names: dict[str, str] | None = None
    tokens: TokenEstimate | None = None


class RouteBatchAnswer(Answer):
    answers: list[RouteAnswer]


class ValidateRequest(Request):
    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    namespace: str | None = None
    route_id: str | None = None


class CallProblem(Answer):
    path: str
    message: str
    suggestion: str | None = None


class Validation(Answer):
    valid: bool
    errors: list[CallProblem]
    did_you_mean: list[str]

    def explain(self) -> str:
        """The problems in one text a model can act on."""
        lines = [p.message + (f" ({p.suggestion})" if p.suggestion else "") for p in self.errors]
        return "; ".join(lines) or "valid"


class FeedbackRequest(Request):
    route_id: str = Field(min_length=1)
    chosen: str | None
    outcome: Outcome = "unknown"
    error_code: str | None = None


class Feedback(Answer):
    route_id: str
    namespace: str
    chosen: str | None
    outcome: Outcome
    error_code: str | None = None
    rank: int | None = None
    verdict: Verdict
    from_validate: bool = False
    created_at: datetime | None = None
    updated_at: datetime | None = None


class CallRequest(Request):
    """One tool call for the gateway (``POST /v1/call``)."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    namespace: str | None = None
    route_id: str | None = None
    timeout_seconds: float | None = Field(default=None, gt=0)


class CallError(Answer):
    code: str
    message: str
    retryable: bool = False
    suggestion: str | None = None
    details: Any = None


class CallResult(Answer):
    """The tool's result (``ok``) or a structured error."""

    ok: bool
    name: str
    namespace: str
    result: Any = None
    error: CallError | None = None
    route_id: str | None = None
    attempts: int = 0
    latency_ms: float = 0.0

    def raise_for_error(self) -> Any:
        """The result, or a ``ToolCallError`` carrying the gateway's error."""
        if self.ok:
            return self.result
        error = self.error or CallError(code="unknown", message="no result and no error")
        raise ToolCallError(
            self.name,
            error.code,
            error.message,
            retryable=error.retryable,
            suggestion=error.suggestion,
            details=error.details,
        )


class BatchCallResult(Answer):
    results: list[CallResult]
    succeeded: int
    failed: int


class ErrorEntry(Answer):
    code: str
    meaning: str
    suggestion: str | None = None


class Tool(Answer):
    """A stored tool card with its version and timestamps (native format)."""

    name: str
    namespace: str
    summary: str
    title: str | None = None
    description: str
    parameters: dict[str, Any]
    returns: dict[str, Any] | None = None
    errors: list[ErrorEntry] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list)
    pinned: bool = False
    annotations: dict[str, Any] | None = None
    version: int
    created_at: datetime
    updated_at: datetime
    deleted: bool = False

    def suggestion_for(self, code: str) -> str | None:
        """What the card says to do after the error ``code``."""
        return next((e.suggestion for e in self.errors if e.code == code), None)


class ToolList(Answer):
    items: list[dict[str, Any]]
    total: int
    offset: int
    limit: int
    format: ExportFormat = "native"

    def tools(self) -> list[Tool]:
        """The items as native cards (a list without ``format``)."""
        return [Tool.model_validate(item) for item in self.items]


class BulkResult(Answer):
    created: list[str]
    updated: list[str]
    unchanged: list[str]


class Stats(Answer):
    """``GET /v1/stats``: the counts typed, the rest (rates, buckets, tools, ...) as sent."""

    routes: int
    feedback: int
    hit_at_1: int
    hit_at_k: int
    miss: int
    none_fit: int
    success: int
    rates: dict[str, float | None] = Field(default_factory=dict)
    latency_ms: dict[str, float | None] = Field(default_factory=dict)
    buckets: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)
    confusions: list[dict[str, Any]] = Field(default_factory=list)
    misroutes: list[dict[str, Any]] = Field(default_factory=list)
    dropped_events: int = 0
