"""What the ``/v1/tools`` endpoints do: write a tool in any format, import many, read one or
a page of them. The endpoints only parse the request and shape the answer
(``ToolRead.from_stored``); the rules about names and namespaces live here.

A key limited to namespaces passes them: ``writable`` (an admin's writes: 403 elsewhere) or
``visible`` (reads: another namespace's tool is the 404 of a tool that does not exist, a
list leaves it out). None: every namespace. The rule: app/keys/scope.py.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Collection, Iterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from app.embedding.encoders import Encoder
from app.keys.scope import only_namespace, require_writable
from app.tools import catalog
from app.tools.card_lint import card_warnings
from app.tools.imports import StreamedImport
from app.tools.live_index import IndexManager
from registry import repository
from registry.card import ToolCard
from registry.errors import InvalidInput, ToolReachError
from registry.lint import LintWarning
from registry.repository import StoredCard, WriteStatus
from registry.tool_search import DEFERRABLE

log = logging.getLogger("toolreach")


def named(body: dict[str, Any], name: str) -> dict[str, Any]:
    """``body`` with the path's name wherever its format puts a name and it gave none: at the
    top, or in an OpenAI Chat Completions tool's ``function``."""
    item = {"name": name, **body}
    function = body.get("function")
    if body.get("type") == "function" and isinstance(function, dict) and "name" not in function:
        item["function"] = {"name": name, **function}
    return item


def parse_in_namespace(
    body: dict[str, Any], namespace: str | None, writable: Collection[str] | None = None
) -> ToolCard:
    """The card in ``body``, in ``namespace`` if it names none (no ``namespace``: the only one
    of a key limited to one); InvalidInput if it names another than ``namespace`` (which one
    was meant cannot be guessed); Forbidden if the key may not write there."""
    card = catalog.parse_card(body, namespace or only_namespace(writable))
    if namespace is not None and card.namespace != namespace:
        raise InvalidInput(
            f"the body names namespace {card.namespace!r} but the query names {namespace!r}"
        )
    require_writable(card.namespace, writable)
    return card


def create_tool(
    session: Session,
    encoder: Encoder,
    body: dict[str, Any],
    namespace: str | None,
    writable: Collection[str] | None = None,
    *,
    sessions: sessionmaker[Session] | None = None,
) -> StoredCard:
    """Register a new tool; Conflict if its name exists in its namespace. ``sessions``: its
    vector is made and stored before ``session`` begins (``catalog.embed_first``)."""
    card = parse_in_namespace(body, namespace, writable)
    embedding = None if sessions is None else catalog.embed_first(sessions, encoder, [card])
    catalog.write_cards(session, encoder, [card], create_only=True, embedding=embedding)
    return repository.get_card(session, card.namespace, card.name)


def put_tool(
    session: Session,
    encoder: Encoder,
    name: str,
    body: dict[str, Any],
    namespace: str | None,
    writable: Collection[str] | None = None,
    *,
    sessions: sessionmaker[Session] | None = None,
) -> tuple[StoredCard, WriteStatus]:
    """Create tool ``name`` or add a version of it (none if unchanged); the body may leave
    the name out, and InvalidInput if it names another. ``sessions``: as ``create_tool``."""
    card = parse_in_namespace(named(body, name), namespace, writable)
    if card.name != name:
        raise InvalidInput(f"the body names {card.name!r} but the path names {name!r}")
    embedding = None if sessions is None else catalog.embed_first(sessions, encoder, [card])
    [status] = catalog.write_cards(session, encoder, [card], embedding=embedding)
    return repository.get_card(session, card.namespace, card.name), status


def import_tools(
    session: Session,
    encoder: Encoder,
    items: Sequence[Any],
    namespace: str | None,
    writable: Collection[str] | None = None,
    *,
    sessions: sessionmaker[Session] | None = None,
    index: IndexManager | None = None,
) -> tuple[dict[WriteStatus, list[str]], list[tuple[str, LintWarning]]]:
    """Write every item, or none: InvalidInput listing each bad one, Forbidden at the first in
    a namespace the key may not write. The names written, by what happened to each, and each
    written card's lint warnings (look-alikes sought in ``index``). ``sessions``: the vectors
    are stored before ``session`` begins."""
    batch, statuses = catalog.import_items(
        session,
        encoder,
        items,
        namespace or only_namespace(writable),
        writable,
        sessions=sessions,
    )
    if statuses is None:
        raise InvalidInput(
            f"{len(batch.rejects)} of {len(items)} tools are invalid; nothing was written",
            batch.rejects,
        )
    names: dict[WriteStatus, list[str]] = {"created": [], "updated": [], "unchanged": []}
    for card, status in zip(batch.cards, statuses, strict=True):
        names[status].append(card.name)
    found = card_warnings(index, batch.cards)
    return names, [
        (card.name, w) for card, each in zip(batch.cards, found, strict=True) for w in each
    ]


def start_import(
    sessions: sessionmaker[Session],
    encoder: Encoder,
    namespace: str | None,
    writable: Collection[str] | None,
    line_limit: int,
) -> StreamedImport:
    """A streamed NDJSON import (app/tools/imports.py) into ``namespace`` (for a card that
    names none; none given: the only one of a key limited to one), or Forbidden at the
    first card in a namespace the key may not write."""
    return StreamedImport(
        sessions, encoder, namespace or only_namespace(writable), line_limit, writable
    )


def run_import(job: StreamedImport, index: IndexManager) -> dict[WriteStatus, list[str]]:
    """Write a parsed streamed import, then bring the index up to it (read-your-writes)."""
    names = job.write()
    _catch_up(index)
    return names


def import_progress(job: StreamedImport, index: IndexManager) -> Iterator[bytes]:
    """``run_import`` as NDJSON lines: each progress event as it happens, then
    ``{"result": {"created": [...], "updated": [...], "unchanged": [...]}}``, or
    ``{"error": {"code", "message", "details"}}`` if the write failed (nothing written)."""
    events: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()

    def work() -> None:
        try:
            events.put({"result": job.write(events.put)})
            _catch_up(index)
        except ToolReachError as exc:
            events.put(
                {"error": {"code": exc.code, "message": exc.message, "details": exc.details}}
            )
        except Exception as exc:
            log.exception("a streamed import failed")
            message = f"the import failed ({type(exc).__name__}); nothing was written"
            events.put({"error": {"code": "internal", "message": message, "details": None}})
        finally:
            events.put(None)

    threading.Thread(target=work, name="import", daemon=True).start()
    while (event := events.get()) is not None:
        yield json.dumps(event).encode() + b"\n"


def _catch_up(index: IndexManager) -> None:
    try:
        index.sync()
    except Exception:  # the write landed; the background poll will catch the index up
        log.exception("index sync after an import failed")


def delete_tool(
    session: Session, namespace: str, name: str, writable: Collection[str] | None = None
) -> None:
    """Take a tool out of routing; NotFound if there is none, Forbidden out of the scope."""
    require_writable(namespace, writable)
    catalog.delete_card(session, namespace, name)


def read_tool(
    session: Session,
    namespace: str,
    name: str,
    version: int | None,
    visible: Collection[str] | None = None,
) -> StoredCard:
    """A tool's current card, or version ``version`` of it; NotFound if there is none, or if
    it is in a namespace out of ``visible``: the same answer, word for word."""
    if visible is not None and namespace not in visible:
        raise repository.no_tool(namespace, name)
    return repository.get_card(session, namespace, name, version)


def read_history(
    session: Session,
    namespace: str,
    name: str,
    version: int | None,
    visible: Collection[str] | None = None,
) -> tuple[StoredCard, list[tuple[int, datetime]]]:
    """A tool's card at ``version`` (else its latest: a deleted tool shows its last), and
    every version's number and time, newest first; NotFound if the tool never existed (or
    is out of ``visible``)."""
    hidden = visible is not None and namespace not in visible
    versions = [] if hidden else repository.list_versions(session, namespace, name)
    if not versions:
        raise repository.no_tool(namespace, name)
    return repository.get_card(session, namespace, name, version or versions[0][0]), versions


def list_tools(
    session: Session,
    *,
    namespace: str | None,
    tag: str | None = None,
    text: str | None = None,
    offset: int = 0,
    limit: int = 50,
    format: str | None = None,
    defer_loading: bool = False,
    visible: Collection[str] | None = None,
) -> tuple[list[StoredCard], int]:
    """A page of live tools, by namespace and name, filtered; and how many match in all.
    Only of ``visible`` namespaces (None: of all). ``defer_loading`` is for the formats whose
    platform takes it (checked before reading)."""
    if defer_loading and format not in DEFERRABLE:
        raise InvalidInput(f"defer_loading=true needs format {' or '.join(DEFERRABLE)}")
    return repository.list_cards(
        session,
        namespace=namespace,
        tag=tag,
        text=text,
        offset=offset,
        limit=limit,
        namespaces=visible,
    )
