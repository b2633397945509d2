"""A tool's *binding*: how the gateway calls one tool read from a source. The sources write
it (app/sources/openapi.py, app/sources/mcp.py), ``source_tools.binding`` stores it as JSON
(app/sources/models.py), the gateway reads it (app/gateway/service.py, http_call.py).

* ``HttpBinding`` (``kind: "http"``, an OpenAPI operation): the method, the server (none,
  with the reason under ``not_callable``, when the operation's own cannot be used:
  app/sources/openapi_servers.py), the path template, whether a call is safe to repeat,
  where each argument goes (``Param``) and the body (``BodyFields``: its fields side by
  side with the parameters; ``BodyArgument``: one ``body`` argument);
* ``McpBinding`` (``kind: "mcp"``): the tool's upstream name, whether it is safe to repeat.

``stored`` writes the JSON every version has stored (no migration); ``parse`` reads it back
once, where it is read from the database, and a stored binding that does not fit is
``BindingUnreadable``, naming the tool.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError

Place = Literal["path", "query", "header", "cookie"]
PLACES: dict[str, Place] = {place: place for place in get_args(Place)}


def _word_or_none(value: Any) -> str | None:
    """A document's ``style``: a word the gateway compares; any other value is none."""
    return value if isinstance(value, str) else None


def _flag_or_none(value: Any) -> bool | None:
    """A document's ``explode``: only ``false`` changes what is sent; any other value is none."""
    return value if isinstance(value, bool) else None


def _format_as_text(value: Any) -> str | None:
    """A document's ``collectionFormat``: a value of another type is a format the gateway
    does not know (its values repeated, as for ``multi``), so it is kept as its text."""
    return value if value is None or isinstance(value, str) else str(value)


class _Stored(BaseModel):
    """Strict: a stored value of the wrong type is an unreadable binding, never coerced."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, validate_by_name=True)


class Param(_Stored):
    """Where one argument of an OpenAPI operation goes, as its document declares it."""

    arg: str  # the card's argument
    place: Place = Field(alias="in")
    name: str  # the parameter's own name there
    style: Annotated[str | None, BeforeValidator(_word_or_none)] = None
    explode: Annotated[bool | None, BeforeValidator(_flag_or_none)] = None
    collection: Annotated[str | None, BeforeValidator(_format_as_text)] = None  # 2.0's


class BodyFields(_Stored):
    """A body whose fields are the card's arguments, side by side with the parameters."""

    media: str
    fields: tuple[str, ...] = Field(strict=False)  # stored as a JSON list


class BodyArgument(_Stored):
    """A body that is the card's one ``body`` argument."""

    media: str
    arg: Literal["body"] = "body"


Body = BodyFields | BodyArgument


class HttpBinding(_Stored):
    """An OpenAPI operation: the HTTP request a call sends."""

    kind: Literal["http"] = "http"
    method: str
    server: str | None  # None: not callable until the source has a base_url
    path: str  # the template, ``{name}`` for each path argument
    safe: bool  # GET, HEAD, OPTIONS: retried on a retryable failure
    not_callable: str | None = None  # why there is no server; stored only when there is one
    params: tuple[Param, ...] = Field(default=(), strict=False)
    body: Body | None = None


class McpBinding(_Stored):
    """A live MCP server's tool: ``tools/call`` by its upstream name."""

    kind: Literal["mcp"] = "mcp"
    tool: str
    safe: bool  # annotated readOnlyHint or idempotentHint


Binding = HttpBinding | McpBinding
_BINDING: TypeAdapter[Binding] = TypeAdapter(Annotated[Binding, Field(discriminator="kind")])


class BindingUnreadable(Exception):
    """A stored binding that does not fit the type; the message names the tool and why."""


def stored(binding: Binding) -> dict[str, Any]:
    """The binding as ``source_tools.binding`` holds it (the JSON every version wrote)."""
    unset = isinstance(binding, HttpBinding) and binding.not_callable is None
    dropped = {"not_callable"} if unset else None
    return binding.model_dump(mode="json", by_alias=True, exclude=dropped)


def parse(value: Any, tool: str) -> Binding:
    """A stored binding as its type; BindingUnreadable (naming ``tool``) if it does not fit."""
    try:
        return _BINDING.validate_python(value)
    except ValidationError as exc:
        problem = _first(exc)
    raise BindingUnreadable(f"the stored binding of {tool!r} cannot be read: {problem}")


def _first(exc: ValidationError) -> str:
    """Its first problem, by place and message (never the stored value itself)."""
    error = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(map(str, error["loc"])) or "the binding"
    return f"{where}: {error['msg']}"
