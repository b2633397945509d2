"""What a source is, as the admin API and the command line take and show it."""

from __future__ import annotations

import shlex
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.sources.headers import header_problem
from registry.card import NAMESPACE_PATTERN, SOURCE_NAME_PATTERN
from registry.nul import NoNul

SourceName = Annotated[str, Field(pattern=SOURCE_NAME_PATTERN)]
SourceKind = Literal["openapi", "mcp"]
_HeaderName = Annotated[str, Field(pattern=r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")]
_EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")]
# An http(s) URL with a host (ASCII: an IDN host as punycode), an optional port, no
# credentials: anything else is the caller's mistake (422), not a source that failed (502).
HTTP_URL_PATTERN = (
    r"^https?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.?)(:[0-9]{1,5})?([/?#]\S*)?$"
)
_HttpUrl = Annotated[str, Field(max_length=4096, pattern=HTTP_URL_PATTERN)]


class SecretRef(NoNul):
    """A secret by reference: the environment variable or the file that holds it, read at
    call time. Only the reference is stored and shown; the value never is."""

    model_config = ConfigDict(extra="forbid")

    env: _EnvName | None = Field(default=None, description="an environment variable's name")
    file: str | None = Field(
        default=None, max_length=4096, description="a file under TOOLREACH_SECRET_DIRS"
    )
    prefix: str = Field(default="", max_length=64, description='put before it, e.g. "Bearer "')

    @model_validator(mode="after")
    def _one_place(self) -> SecretRef:
        if (self.env is None) == (self.file is None):
            raise ValueError("a secret reference names exactly one of env or file")
        if self.env is not None and self.env.upper().startswith("TOOLREACH_"):
            raise ValueError("the service's own settings (TOOLREACH_*) are not a source's secret")
        if any(c < " " or c == "\x7f" for c in self.prefix):
            raise ValueError("a secret's prefix holds no line break or other control character")
        return self


# A plain string is stored and shown as it is (not a secret); a SecretRef is resolved late.
Value = Annotated[str, Field(max_length=4096)] | SecretRef


class SourceConfig(NoNul):
    """How to reach a source and what to send it: stored with the source, never a secret."""

    model_config = ConfigDict(extra="forbid")

    url: _HttpUrl | None = Field(
        default=None,
        description="an OpenAPI document's URL, or an MCP server's streamable HTTP endpoint",
    )
    path: str | None = Field(
        default=None, max_length=4096, description="an OpenAPI document's file (JSON or YAML)"
    )
    command: list[Annotated[str, Field(max_length=4096)]] | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="an MCP server run as a local command over stdio: its argv, e.g. "
        '["node", "server.js", "stdio"], or one string split as a shell would, as the CLI\'s '
        '--stdio takes it ("node server.js stdio"; needs TOOLREACH_SOURCE_STDIO_ALLOWED)',
    )
    env: dict[_EnvName, Value] = Field(
        default_factory=dict, max_length=64, description="a stdio server's environment"
    )
    headers: dict[_HeaderName, Value] = Field(
        default_factory=dict, max_length=64, description="sent with every request to the source"
    )
    query: dict[Annotated[str, Field(min_length=1, max_length=128)], SecretRef] = Field(
        default_factory=dict, max_length=16, description="API keys sent as query parameters"
    )
    base_url: _HttpUrl | None = Field(
        default=None, description="OpenAPI: call here instead of its servers"
    )
    prefix: str = Field(
        default="",
        max_length=32,
        pattern=r"^[A-Za-z0-9_.:-]*$",
        description="put before every tool's name (keeps two sources' names apart)",
    )
    strict: bool = Field(
        default=False,
        description="OpenAPI: refuse a document the validator finds invalid (default: import "
        "it and list the problems)",
    )

    @field_validator("command", mode="before")
    @classmethod
    def _argv(cls, value: Any) -> Any:
        """A command given as one string is split as a shell would (the CLI's ``--stdio``):
        "node server.js" is ["node", "server.js"]. Nothing is run by a shell."""
        if not isinstance(value, str):
            return value
        try:
            return shlex.split(value)
        except ValueError as exc:  # an unclosed quote
            raise ValueError(f"the command cannot be split into words: {exc}") from None

    @model_validator(mode="after")
    def _sendable_headers(self) -> SourceConfig:
        for name, value in self.headers.items():
            problem = header_problem(value) if isinstance(value, str) else None
            if problem is not None:
                raise ValueError(f"header {name!r} cannot be sent: {problem}")
        return self

    def secrets(self) -> list[SecretRef]:
        values = [*self.env.values(), *self.headers.values(), *self.query.values()]
        return [v for v in values if isinstance(v, SecretRef)]


class SourceCreate(SourceConfig):
    """Register a source: an OpenAPI document (url or path) or an MCP server (url or
    command). It is read at once; nothing is stored if it cannot be."""

    name: SourceName
    namespace: Annotated[str, Field(pattern=NAMESPACE_PATTERN)] = "default"
    kind: SourceKind

    @model_validator(mode="after")
    def _one_location(self) -> SourceCreate:
        given = [k for k in ("url", "path", "command") if getattr(self, k) is not None]
        allowed = ("url", "path") if self.kind == "openapi" else ("url", "command")
        if len(given) != 1 or given[0] not in allowed:
            raise ValueError(f"a {self.kind} source has exactly one of {' or '.join(allowed)}")
        if self.kind == "mcp" and self.base_url is not None:
            raise ValueError("base_url is for OpenAPI sources")
        if self.env and self.command is None:
            raise ValueError("env is for a source run as a command")
        return self

    def config(self) -> SourceConfig:
        return SourceConfig.model_validate(
            self.model_dump(exclude={"name", "namespace", "kind"}, exclude_defaults=True)
        )


class SyncReport(BaseModel):
    """What one sync did."""

    source: str
    status: Literal["synced", "unchanged"]
    tools: int = Field(description="the source's live tools after the sync")
    created: list[str] = Field(default_factory=list)
    updated: list[str] = Field(default_factory=list)
    unchanged: int = 0
    retired: list[str] = Field(default_factory=list)
    refused: list[dict[str, str]] = Field(
        default_factory=list, description="what could not become a card, and why"
    )
    problems: list[str] = Field(
        default_factory=list, description="what the OpenAPI validator found wrong"
    )
    notes: list[str] = Field(default_factory=list)
    warnings: list[dict[str, str]] = Field(
        default_factory=list,
        description="what the lint found in the cards written: {tool, code, message}",
    )
    seconds: float = 0.0


class SourceRead(BaseModel):
    """A registered source; its secrets appear as references only."""

    id: int
    name: str
    namespace: str
    kind: SourceKind
    config: dict[str, Any]
    tools: int = Field(description="live tools read from it")
    retired: int = Field(description="tools it no longer lists (retired, history kept)")
    content_hash: str | None
    synced_at: datetime | None
    last_error: str | None
    last_report: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime


class SourceList(BaseModel):
    items: list[SourceRead]
    total: int
