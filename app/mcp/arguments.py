"""The meta-tools' arguments: parsed strictly, with the aliases models are seen to send
(``tool_name`` for ``name``, ``parameters`` for ``arguments``: ToolHive PR #6150), and the
input schemas ``tools/list`` shows (the canonical names only)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    model_validator,
)

from app.schemas import MAX_BATCH_STEPS, RouteRequest

_Name = Annotated[str, Field(min_length=1, max_length=256)]
_RouteId = Annotated[str, Field(min_length=1, max_length=64)]


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchArguments(_Arguments):
    """One step (``query``) or several (``queries``, hermes-agent's and openclaw's shape):
    exactly one of them."""

    query: str | None = None  # its limits are RouteRequest's, checked there
    queries: list[str] | None = Field(default=None, min_length=1, max_length=MAX_BATCH_STEPS)
    k: int = RouteRequest.model_fields["k"].default
    context: dict[str, Any] = Field(default_factory=dict)
    split: StrictBool = RouteRequest.model_fields["split"].default

    @model_validator(mode="after")
    def _one_of_query_or_queries(self) -> SearchArguments:
        if (self.query is None) == (self.queries is None):
            raise ValueError("give either query (one step) or queries (several), not both")
        return self

    def steps(self) -> list[dict[str, Any]]:
        """Each step as the fields of a route request."""
        texts = [self.query] if self.query is not None else list(self.queries or [])
        common = {"k": self.k, "context": self.context, "split": self.split}
        return [{"query": text, **common} for text in texts]


class NameArguments(_Arguments):
    name: _Name = Field(validation_alias=AliasChoices("name", "tool_name"))


class CallArguments(_Arguments):
    """A tool call: ``validate_call`` now, and ``call_tool`` when the gateway forwards."""

    name: _Name = Field(validation_alias=AliasChoices("name", "tool_name"))
    arguments: dict[str, Any] = Field(
        default_factory=dict, validation_alias=AliasChoices("arguments", "parameters")
    )
    route_id: _RouteId | None = None


def problems(error: ValidationError) -> str:
    """A pydantic error as one line a model can act on: where, and what is wrong."""
    return "; ".join(
        f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}"
        for e in error.errors(include_url=False)
    )


_NAME = {"type": "string", "description": "the tool's name, as search_tools gave it"}
_ARGUMENTS = {"type": "object", "description": "the arguments the call would pass"}
_ROUTE_ID = {
    "type": "string",
    "description": "the route_id of the search_tools answer the tool came from (records it)",
}

SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "the step to do next, in words"},
        "queries": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": MAX_BATCH_STEPS,
            "description": "instead of query: several steps at once, each answered on its own",
        },
        "k": {"type": "integer", "minimum": 1, "maximum": 50, "default": 3},
        "context": {
            "type": "object",
            "description": 'argument values already known (e.g. {"city": "Paris"})',
        },
        "split": {
            "type": "boolean",
            "default": True,
            "description": "read a step that asks for several things as its parts (default)",
        },
    },
}
NAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": _NAME},
    "required": ["name"],
}
CALL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": _NAME, "arguments": _ARGUMENTS, "route_id": _ROUTE_ID},
    "required": ["name"],
}
