"""What the ``/v1/tools`` endpoints do: write a tool in any format, import many, read one or
a page of them. The endpoints only parse the request and shape the answer
(``ToolRead.from_stored``); the rules about names and namespaces live here.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from app.embedding.encoders import Encoder
from app.tools import catalog
from app.tools.imports import StreamedImport
from app.tools.live_index import IndexManager
from registry import repository
from registry.card import ToolCard
from registry.errors import InvalidInput, NotFound, ToolReachError
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


def parse_in_namespace(body: dict[str, Any], namespace: str | None) -> ToolCard:
    """The card in ``body``, in ``namespace`` if it names none; InvalidInput if it names
    another (which one was meant cannot be guessed)."""
    card = catalog.parse_card(body, namespace)
    if namespace is not None and card.namespace != namespace:
        raise InvalidInput(
            f"the body names namespace {card.namespace!r} but the query names {namespace!r}"
        )
    return card


def create_tool(
    session: Session,
    sessions: sessionmaker[Session],
    encoder: Encoder,
    body: dict[str, Any],
    namespace: str | None,
) -> StoredCard:
    """Register a new tool; Conflict if its name exists in its namespace. Its vector is
    made and stored before ``session`` begins (``catalog.embed_first``)."""
    card = parse_in_namespace(body, namespace)
    embedding = catalog.embed_first(sessions, encoder, [card])
    catalog.write_cards(session, encoder, [card], create_only=True, embedding=embedding)
    return repository.get_card(session, card.namespace, card.name)


def put_tool(
    session: Session,
    sessions: sessionmaker[Session],
    encoder: Encoder,
    name: str,
    body: dict[str, Any],
    namespace: str | None,
) -> tuple[StoredCard, WriteStatus]:
    """Create tool ``name`` or add a version of it (none if unchanged); the body may leave
    the name out, and InvalidInput if it names another."""
    card = parse_in_namespace(named(body, name), namespace)
    if card.name != name:
        raise InvalidInput(f"the body names {card.name!r} but the path names {name!r}")
    embedding = catalog.embed_first(sessions, encoder, [card])
    [status] = catalog.write_cards(session, encoder, [card], embedding=embedding)
    return repository.get_card(session, card.namespace, card.name), status


def import_tools(
    session: Session,
    sessions: sessionmaker[Session],
    encoder: Encoder,
    items: Sequence[Any],
    namespace: str | None,
) -> dict[WriteStatus, list[str]]:
    """Write every item, or none: InvalidInput listing each bad one. The names written, by
    what happened to each. The vectors are stored before ``session`` begins."""
    batch, statuses = catalog.import_items(session, encoder, items, namespace, sessions=sessions)
    if statuses is None:
        raise InvalidInput(
            f"{len(batch.rejects)} of {len(items)} tools are invalid; nothing was written",
            batch.rejects,
        )
    names: dict[WriteStatus, list[str]] = {"created": [], "updated": [], "unchanged": []}
    for card, status in zip(batch.cards, statuses, strict=True):
        names[status].append(card.name)
    return names


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


def read_tool(session: Session, namespace: str, name: str, version: int | None) -> StoredCard:
    """A tool's current card, or version ``version`` of it; NotFound if there is none."""
    return repository.get_card(session, namespace, name, version)


def read_history(
    session: Session, namespace: str, name: str, version: int | None
) -> tuple[StoredCard, list[tuple[int, datetime]]]:
    """A tool's card at ``version`` (else its latest: a deleted tool shows its last), and
    every version's number and time, newest first; NotFound if the tool never existed."""
    versions = repository.list_versions(session, namespace, name)
    if not versions:
        raise NotFound(f"no tool {name!r} in namespace {namespace!r}")
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
) -> tuple[list[StoredCard], int]:
    """A page of live tools, by namespace and name, filtered; and how many match in all.
    ``defer_loading`` is for the formats whose platform takes it (checked before reading)."""
    if defer_loading and format not in DEFERRABLE:
        raise InvalidInput(f"defer_loading=true needs format {' or '.join(DEFERRABLE)}")
    return repository.list_cards(
        session, namespace=namespace, tag=tag, text=text, offset=offset, limit=limit
    )
