"""Read a source as it is now: its cards and bindings, what was refused, and one hash of it
all (the same hash again means nothing changed)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio
import httpx

from app.sources import openapi
from app.sources.binding import Binding, HttpBinding, stored
from app.sources.causes import unreached
from app.sources.documents import (
    Deadline,
    DocumentError,
    DocumentLimits,
    DocumentMissing,
    Documents,
    file_uri,
    load_documents,
    read_file,
)
from app.sources.headers import header_problem
from app.sources.masking import mask
from app.sources.mcp import ListingTooLarge, Reach, connect, list_all_tools, to_cards
from app.sources.openapi_check import problems
from app.sources.outbound import (
    OutboundRefused,
    OutboundRules,
    ResponseTooLarge,
    http_client,
    same_origin,
)
from app.sources.schemas import SourceConfig, SourceKind
from app.sources.secrets import SecretMissing, resolve_all, secret_values
from registry.card import ToolCard
from registry.errors import ToolReachError

MAX_REDIRECTS = 5
REASON_CHARS = 600  # of a failure's reason, cut after the secrets are masked


# What refuses to read a source, in words of its own (the rest is worded here).
READ_REFUSED = (OutboundRefused, SecretMissing, DocumentError, ResponseTooLarge, ListingTooLarge)


class SourceFailed(ToolReachError):
    """The source could not be read (unreachable, refused, invalid): nothing changed."""

    status_code = 502
    code = "source_failed"


class SourceMissing(SourceFailed):
    """A local file the source names (or its ``$ref``s name) is not there: the caller's
    mistake, not the source's failure. Nothing changed."""

    status_code = 422
    code = "invalid_input"


@dataclass(frozen=True)
class SourceSpec:
    name: str
    namespace: str
    kind: SourceKind
    config: SourceConfig


@dataclass
class Snapshot:
    cards: Sequence[tuple[ToolCard, Binding]]
    refused: list[dict[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def hash(self) -> str:
        content = [[c.model_dump(mode="json"), stored(b)] for c, b in self.cards]
        text = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


async def fetch(spec: SourceSpec, reach: Reach, limits: DocumentLimits | None = None) -> Snapshot:
    """The source's tools now; SourceFailed (with the reason) if it cannot be read, its
    SourceMissing when a local file it names is not there. The reason never holds a secret's
    value: a refused secret is named by its reference, and anything the source or a library
    said is masked."""
    try:
        if spec.kind == "openapi":
            return await _openapi(spec, reach, limits or DocumentLimits())
        return await _mcp(spec, reach)
    except Exception as exc:
        leaf = _leaf(exc)
        failure = SourceMissing if isinstance(leaf, DocumentMissing) else SourceFailed
        message = _failure(spec.name, leaf, exc)
    shown = mask(message, secret_values(spec.config, reach.secret_dirs))
    raise failure(shown[:REASON_CHARS])


def _failure(name: str, exc: BaseException, whole: BaseException | None = None) -> str:
    """What went wrong, in a line: a rule's refusal, the cause the source could not be
    reached for (app/sources/causes.py: looked for in the whole chain), or the error."""
    if isinstance(exc, READ_REFUSED):
        return f"source {name!r}: {exc}"
    found = unreached(whole or exc)
    if found is not None:
        return f"source {name!r} is unreachable: {found.reason}"
    if isinstance(exc, httpx.HTTPError | OSError | TimeoutError):
        return f"source {name!r} is unreachable: {_text(exc)}"
    return f"source {name!r} failed: {_text(exc)}"  # the MCP SDK's, a malformed answer


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside a task group's exception group (the SDK's transports run
    in task groups), else ``exc``."""
    nested = getattr(exc, "exceptions", None)
    return _leaf(nested[0]) if nested else exc


def _text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".rstrip(": ")


async def _mcp(spec: SourceSpec, reach: Reach) -> Snapshot:
    async with connect(spec.config, reach) as connected:
        tools = await list_all_tools(connected.session, reach)
    listed = to_cards(tools, source=spec.name, namespace=spec.namespace, prefix=spec.config.prefix)
    return Snapshot(listed.cards, refused=listed.refused)


async def _openapi(spec: SourceSpec, reach: Reach, limits: DocumentLimits) -> Snapshot:
    config = spec.config
    deadline = limits.deadline()
    if config.base_url is not None:
        await reach.rules.check_url(config.base_url)
    if config.url is not None:
        await reach.rules.check_url(config.url)
        headers = resolve_all(config.headers, reach.secret_dirs, check=header_problem).values
        async with http_client(reach.rules, timeout=reach.timeout, headers=headers) as client:
            documents = await load_documents(
                config.url, lambda uri: _download(client, uri), limits, deadline
            )
    else:
        documents = await load_documents(
            file_uri(str(config.path)),
            lambda uri: read_file(uri, limits.max_bytes),
            limits,
            deadline,
        )
    options = openapi.Options(
        namespace=spec.namespace,
        source=spec.name,
        prefix=config.prefix,
        base_url=config.base_url.rstrip("/") if config.base_url else None,
        supplied=frozenset(
            {("header", h.lower()) for h in config.headers}
            | {("query", q.lower()) for q in config.query}
        ),
    )
    # Checking and converting a big document is seconds of CPU: off the event loop.
    snapshot = await anyio.to_thread.run_sync(
        _convert, documents, options, config.strict, deadline, limits.max_card_bytes
    )
    if config.base_url is None:  # the servers the document itself names: checked now too
        for server in _servers(snapshot):
            try:
                await reach.rules.check_url(server, unresolved_ok=True)
            except OutboundRefused as exc:
                raise OutboundRefused(f"the document's server {server}: {exc}") from None
    return snapshot


def _servers(snapshot: Snapshot) -> list[str]:
    """The servers its operations are sent to (one with no usable server, ``not_callable``,
    has none to check)."""
    bindings = (b for _, b in snapshot.cards if isinstance(b, HttpBinding))
    return sorted({b.server for b in bindings if b.server})


def _convert(
    documents: Documents,
    options: openapi.Options,
    strict: bool,
    deadline: Deadline | None = None,
    max_card_bytes: int | None = None,
) -> Snapshot:
    version = openapi.spec_version(documents.document)
    found = problems(documents, version)
    if strict and found:
        raise DocumentError(f"the document is invalid ({len(found)} problems): {found[0]}")
    if deadline is not None:
        deadline.check("checking the document")
    converted = openapi.convert(documents, options, deadline, max_card_bytes)
    return Snapshot(
        converted.cards, refused=converted.refused, problems=found, notes=converted.notes
    )


async def _download(client: httpx.AsyncClient, url: str) -> bytes:
    response = await get_within_origin(client, url)
    if response.status_code != 200:
        raise DocumentError(f"{url}: HTTP {response.status_code}")
    return response.content


async def get_within_origin(client: httpx.AsyncClient, url: str) -> httpx.Response:
    """GET ``url``, following redirects only within its origin."""
    for _ in range(MAX_REDIRECTS + 1):
        response = await client.get(url)
        if not response.is_redirect:
            return response
        target = str(response.url.join(response.headers.get("location", "")))
        if not same_origin(url, target):
            raise OutboundRefused(
                f"a redirect to another origin ({httpx.URL(target).host}) refused"
            )
        url = target
    raise OutboundRefused(f"more than {MAX_REDIRECTS} redirects")


def reach_of(
    rules: OutboundRules, secret_dirs: tuple[str, ...], timeout: float, stdio_allowed: bool
) -> Reach:
    return Reach(rules, secret_dirs, timeout, stdio_allowed)
