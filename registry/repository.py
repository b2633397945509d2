"""The one module that reads and writes registry tables. It flushes; it never commits."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from registry.card import TRUSTED, ToolCard, content_hash
from registry.errors import Conflict, NotFound
from registry.models import Embedding, RegistryState, Tool, ToolVersion, insert_new, utcnow

WriteStatus = Literal["created", "updated", "unchanged"]
# Postgres: every revision is announced on this channel at commit (payload: the revision),
# so replicas catch up at once instead of at their next poll (app/tools/listener.py).
REVISION_CHANNEL = "toolreach_registry"


@dataclass(frozen=True, slots=True)
class StoredCard:
    """A card as stored: its content plus version and timestamps."""

    card: ToolCard
    version: int
    created_at: datetime
    updated_at: datetime
    deleted: bool
    revision: int


def _stored(tool: Tool, version: ToolVersion) -> StoredCard:
    return StoredCard(
        card=ToolCard.model_validate(version.card, context=TRUSTED),
        version=version.version,
        created_at=tool.created_at,
        updated_at=version.created_at,
        deleted=tool.deleted_at is not None,
        revision=tool.revision,
    )


def next_revision(session: Session) -> int:
    """Bump and return the registry revision (row-locked on Postgres: writers serialise).

    On Postgres the new revision is also sent on ``REVISION_CHANNEL``: ``NOTIFY`` is
    transactional, so listeners hear of it when (and only if) the write commits.
    """
    state = session.get(RegistryState, 1, with_for_update=True)
    if state is None:
        state = RegistryState(id=1, revision=0)
        session.add(state)
    state.revision += 1
    session.flush()
    if session.get_bind().dialect.name == "postgresql":
        session.execute(select(func.pg_notify(REVISION_CHANNEL, str(state.revision))))
    return state.revision


def current_revision(session: Session) -> int:
    return session.scalar(select(RegistryState.revision).where(RegistryState.id == 1)) or 0


def _find(session: Session, namespace: str, name: str) -> Tool | None:
    return session.scalar(select(Tool).where(Tool.namespace == namespace, Tool.name == name))


def _current_version(session: Session, tool: Tool) -> ToolVersion:
    version = session.scalar(
        select(ToolVersion).where(
            ToolVersion.tool_id == tool.id, ToolVersion.version == tool.current_version
        )
    )
    assert version is not None, "a tool always has its current version"
    return version


def _add_version(session: Session, tool: Tool, card: ToolCard, revision: int) -> None:
    """Bump the tool to a new version holding ``card`` (flushed by the caller)."""
    tool.current_version += 1
    tool.revision = revision
    tool.deleted_at = None
    tool.updated_at = utcnow()
    tool.summary = card.summary[:300]
    tool.tags = "|" + "|".join(card.tags) + "|" if card.tags else ""
    session.add(
        ToolVersion(
            tool_id=tool.id,
            version=tool.current_version,
            card=card.model_dump(mode="json"),
            content_hash=content_hash(card),
        )
    )


def write_card(
    session: Session, card: ToolCard, revision: int, *, create_only: bool = False
) -> WriteStatus:
    """Create a tool, or add a version when its content changed; a deleted tool comes back."""
    [status] = _write_chunk(session, [card], revision, create_only)
    return status


def write_cards(
    session: Session, cards: list[ToolCard], revision: int, *, create_only: bool = False
) -> list[WriteStatus]:
    """``write_card`` for many cards, in a few statements per 500 of them.

    Per chunk: one query finds the tools, one their current content hashes, one flush
    inserts the new tools, one the new versions (one card at a time, that was two flushes
    and a query per card: ~18 s of a 10,000-card registration on the AVX2-only machine). A
    name written twice in one call is written one card at a time, each seeing the last.
    """
    keys = [(c.namespace, c.name) for c in cards]
    if len(set(keys)) < len(keys):
        return [write_card(session, c, revision, create_only=create_only) for c in cards]
    statuses: list[WriteStatus] = []
    for start in range(0, len(cards), 500):
        statuses.extend(_write_chunk(session, cards[start : start + 500], revision, create_only))
    return statuses


def _write_chunk(
    session: Session, cards: list[ToolCard], revision: int, create_only: bool
) -> list[WriteStatus]:
    """Cards whose (namespace, name) are distinct: create, add a version, or leave as is."""
    tools: dict[tuple[str, str], Tool] = {}
    for namespace in {c.namespace for c in cards}:
        names = [c.name for c in cards if c.namespace == namespace]
        query = select(Tool).where(Tool.namespace == namespace, Tool.name.in_(names))
        tools.update(((t.namespace, t.name), t) for t in session.scalars(query))
    live = [t.id for t in tools.values() if t.deleted_at is None]
    hashes: dict[int, str] = {}
    if live:
        current = select(ToolVersion.tool_id, ToolVersion.content_hash).join(
            Tool, (Tool.id == ToolVersion.tool_id) & (Tool.current_version == ToolVersion.version)
        )
        hashes = dict(session.execute(current.where(Tool.id.in_(live))).tuples().all())
    statuses: list[WriteStatus] = []
    changed: list[tuple[Tool, ToolCard]] = []
    new: list[Tool] = []
    for card in cards:
        tool = tools.get((card.namespace, card.name))
        if tool is None:
            tool = Tool(namespace=card.namespace, name=card.name, current_version=0, revision=0)
            new.append(tool)
            statuses.append("created")
        elif tool.deleted_at is None and create_only:
            raise Conflict(
                f"tool {card.name!r} already exists in namespace {card.namespace!r}",
                {
                    "name": card.name,
                    "namespace": card.namespace,
                    "hint": "use PUT to add a version",
                },
            )
        elif tool.deleted_at is None and hashes.get(tool.id) == content_hash(card):
            statuses.append("unchanged")
            continue
        else:
            statuses.append("created" if tool.deleted_at is not None else "updated")
        changed.append((tool, card))
    if new:
        session.add_all(new)
        session.flush()
    for tool, card in changed:
        _add_version(session, tool, card, revision)
    session.flush()
    return statuses


def delete_tool(session: Session, namespace: str, name: str, revision: int) -> None:
    """Take a tool out of routing; its versions stay readable."""
    tool = _find(session, namespace, name)
    if tool is None or tool.deleted_at is not None:
        raise NotFound(f"no tool {name!r} in namespace {namespace!r}")
    tool.deleted_at = utcnow()
    tool.revision = revision
    session.flush()


def no_tool(namespace: str, name: str) -> NotFound:
    """The one answer for a tool that is not there (or, to a key limited to other namespaces,
    not there for it: app/keys/scope.py), word for word."""
    return NotFound(f"no tool {name!r} in namespace {namespace!r}")


def get_card(session: Session, namespace: str, name: str, version: int | None = None) -> StoredCard:
    """The current card, or a given version (also of a deleted tool)."""
    tool = _find(session, namespace, name)
    if tool is None or (version is None and tool.deleted_at is not None):
        raise no_tool(namespace, name)
    if version is None:
        return _stored(tool, _current_version(session, tool))
    row = session.scalar(
        select(ToolVersion).where(ToolVersion.tool_id == tool.id, ToolVersion.version == version)
    )
    if row is None:
        raise NotFound(
            f"tool {name!r} has no version {version}",
            {"current_version": tool.current_version},
        )
    return _stored(tool, row)


def list_versions(session: Session, namespace: str, name: str) -> list[tuple[int, datetime]]:
    """(version, written at) of every version of a tool, also a deleted one; newest first."""
    tool = _find(session, namespace, name)
    if tool is None:
        return []
    rows = session.execute(
        select(ToolVersion.version, ToolVersion.created_at)
        .where(ToolVersion.tool_id == tool.id)
        .order_by(ToolVersion.version.desc())
    )
    return [(version, created_at) for version, created_at in rows.tuples()]


def list_cards(
    session: Session,
    *,
    namespace: str | None,
    tag: str | None = None,
    text: str | None = None,
    offset: int = 0,
    limit: int = 50,
    namespaces: Collection[str] | None = None,
) -> tuple[list[StoredCard], int]:
    """Current cards of live tools, filtered, ordered by namespace and name; and the total.
    ``namespaces``: only tools of these (None: of every namespace)."""
    query = select(Tool).where(Tool.deleted_at.is_(None))
    if namespace is not None:
        query = query.where(Tool.namespace == namespace)
    if namespaces is not None:
        query = query.where(Tool.namespace.in_(sorted(namespaces)))
    if tag:  # autoescape: '%' and '_' are characters, not wildcards; any case, as routes
        query = query.where(func.lower(Tool.tags).contains(f"|{tag.lower()}|", autoescape=True))
    if text:
        needle = text.lower()
        query = query.where(
            func.lower(Tool.name).contains(needle, autoescape=True)
            | func.lower(Tool.summary).contains(needle, autoescape=True)
        )
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    page = session.scalars(
        query.order_by(Tool.namespace, Tool.name).offset(offset).limit(limit)
    ).all()
    return [_stored(tool, _current_version(session, tool)) for tool in page], total


Change = tuple[str, str, ToolCard | None]


def changed_since(
    session: Session, revision: int, chunk_size: int = 1000
) -> Iterator[list[Change]]:
    """(namespace, name, card or None if deleted) for every tool changed after `revision`.

    Streamed in lists of `chunk_size`, oldest change first, reading plain columns (no ORM
    objects pile up in the session): loading 100,000 cards at start-up never holds more than
    one chunk of raw rows.
    """
    rows = session.execute(
        select(Tool.namespace, Tool.name, Tool.deleted_at, ToolVersion.card)
        .join(
            ToolVersion,
            (ToolVersion.tool_id == Tool.id) & (ToolVersion.version == Tool.current_version),
        )
        .where(Tool.revision > revision)
        .order_by(Tool.revision, Tool.id)
        .execution_options(yield_per=chunk_size)
    )
    for chunk in rows.tuples().partitions(chunk_size):
        yield [
            (
                namespace,
                name,
                None if deleted_at is not None else ToolCard.model_validate(card, context=TRUSTED),
            )
            for namespace, name, deleted_at, card in chunk
        ]


def namespace_names(session: Session, namespace: str) -> list[str]:
    return list(
        session.scalars(
            select(Tool.name).where(Tool.namespace == namespace, Tool.deleted_at.is_(None))
        )
    )


def _in_chunks(values: Iterable[str], size: int = 500) -> Iterator[list[str]]:
    wanted = list(set(values))
    for start in range(0, len(wanted), size):
        yield wanted[start : start + size]


def get_embeddings(session: Session, model: str, hashes: Iterable[str]) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for chunk in _in_chunks(hashes):
        rows = session.execute(
            select(Embedding.text_hash, Embedding.vector).where(
                Embedding.model == model, Embedding.text_hash.in_(chunk)
            )
        )
        found.update({h: v for h, v in rows.tuples()})
    return found


def embedded_hashes(session: Session, model: str, hashes: Iterable[str]) -> set[str]:
    """Which of `hashes` already have a vector of `model` (without reading the vectors)."""
    found: set[str] = set()
    for chunk in _in_chunks(hashes):
        found.update(
            session.scalars(
                select(Embedding.text_hash).where(
                    Embedding.model == model, Embedding.text_hash.in_(chunk)
                )
            )
        )
    return found


def put_embeddings(session: Session, model: str, dim: int, vectors: dict[str, bytes]) -> None:
    """Store vectors by (model, text hash). One another writer stored meanwhile (two writes of
    the same text at once) is kept: the same model made it from the same text."""
    if not vectors:
        return
    now = utcnow()
    rows = [
        {"model": model, "text_hash": h, "dim": dim, "vector": v, "created_at": now}
        for h, v in vectors.items()
    ]
    session.execute(insert_new(session, Embedding), rows)


def count_tools(session: Session, namespace: str | None = None) -> int:
    query = select(func.count()).select_from(Tool).where(Tool.deleted_at.is_(None))
    if namespace is not None:
        query = query.where(Tool.namespace == namespace)
    return session.scalar(query) or 0


def live_owners(session: Session, namespace: str, names: Iterable[str]) -> dict[str, str | None]:
    """The source each live tool of these names was read from (None: written by hand)."""
    owners: dict[str, str | None] = {}
    for chunk in _in_chunks(names):
        rows = session.execute(
            select(Tool.name, ToolVersion.card)
            .join(
                ToolVersion,
                (ToolVersion.tool_id == Tool.id) & (ToolVersion.version == Tool.current_version),
            )
            .where(Tool.namespace == namespace, Tool.name.in_(chunk), Tool.deleted_at.is_(None))
        )
        for name, card in rows.tuples():
            source = card.get("source") if isinstance(card, dict) else None
            owners[name] = source.get("name") if isinstance(source, dict) else None
    return owners


def parameter_history(
    session: Session, namespace: str, names: Iterable[str]
) -> dict[str, list[tuple[datetime, dict[str, Any]]]]:
    """(written at, parameters schema) of every version of the live tools of these names
    that have more than one, oldest first (query memory's substance rule,
    ``app/loop/memory.py``)."""
    history: dict[str, list[tuple[datetime, dict[str, Any]]]] = {}
    for chunk in _in_chunks(names):
        rows = session.execute(
            select(Tool.name, ToolVersion.created_at, ToolVersion.card)
            .join(ToolVersion, ToolVersion.tool_id == Tool.id)
            .where(
                Tool.namespace == namespace,
                Tool.name.in_(chunk),
                Tool.deleted_at.is_(None),
                Tool.current_version > 1,  # one version: nothing to compare
            )
            .order_by(Tool.name, ToolVersion.version)
        )
        for name, created_at, card in rows.tuples():
            parameters = card.get("parameters") if isinstance(card, dict) else None
            history.setdefault(name, []).append(
                (created_at, parameters if isinstance(parameters, dict) else {})
            )
    return history
