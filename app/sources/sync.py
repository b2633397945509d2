"""Apply what a source lists now to the registry, in the caller's transaction.

* nothing changes when nothing changed: the snapshot's hash is the last sync's;
* a new tool is created, a changed one gets a new version (registry/repository.py compares
  each card's content hash), an unchanged one is left as it is;
* a tool the source no longer lists is retired: taken out of routing, its versions kept
  readable; it comes back (a new version) if the source lists it again;
* a name taken in the namespace by a tool written by hand, or read from another source, is
  refused, never overwritten.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from sqlalchemy.orm import Session

from app.embedding.encoders import Encoder
from app.sources import repository
from app.sources.fetch import Snapshot
from app.sources.models import Source, SourceTool
from app.sources.schemas import SyncReport
from app.tools.catalog import delete_card, write_cards
from registry import repository as registry
from registry.lint import lint
from registry.models import utcnow


def apply_snapshot(
    session: Session,
    encoder: Encoder,
    source: Source,
    snapshot: Snapshot,
    *,
    started: float,
    force: bool = False,
) -> SyncReport:
    """Write the snapshot's cards, retire what it no longer lists; the report of it.
    ``force``: compare every card even when the snapshot's hash is the last one's."""
    report = SyncReport(
        source=source.name,
        status="unchanged",
        tools=0,
        refused=list(snapshot.refused),
        problems=snapshot.problems,
        notes=snapshot.notes,
    )
    digest = snapshot.hash
    if force or source.content_hash != digest:
        _write(session, encoder, source, snapshot, report)
        source.content_hash = digest
        report.status = "synced"
    report.tools = repository.tool_counts(session, source.id)[0]
    if report.status == "unchanged":  # every live tool of the source is as it was
        report.unchanged = report.tools
    report.seconds = round(time.perf_counter() - started, 3)
    now = utcnow()
    source.synced_at, source.last_error, source.updated_at = now, None, now
    source.last_report = report.model_dump(mode="json")
    session.flush()
    return report


def _write(
    session: Session, encoder: Encoder, source: Source, snapshot: Snapshot, report: SyncReport
) -> None:
    names = [card.name for card, _ in snapshot.cards]
    owners = registry.live_owners(session, source.namespace, names)
    cards, bindings = [], {}
    for card, binding in snapshot.cards:
        owner = owners.get(card.name, source.name)
        if owner != source.name:
            who = f"source {owner!r}" if owner else "a tool written by hand"
            report.refused.append(
                {"name": card.name, "reason": f"the name is taken in the namespace by {who}"}
            )
            continue
        cards.append(card)
        bindings[card.name] = binding
    statuses = write_cards(session, encoder, cards)
    for card, status in zip(cards, statuses, strict=True):
        if status == "unchanged":
            report.unchanged += 1
        else:
            (report.created if status == "created" else report.updated).append(card.name)
            report.warnings += [
                {"tool": card.name, "code": w.code, "message": w.message} for w in lint(card)
            ]
    repository.put_bindings(session, source.id, bindings)
    gone = [
        row
        for row in repository.tools(session, source.id)
        if row.retired_at is None and row.name not in bindings
    ]
    retire_tools(session, source, gone)
    report.retired = [row.name for row in gone]


def retire_tools(session: Session, source: Source, rows: Sequence[SourceTool]) -> None:
    """Take these tools of ``source`` out of routing (the ones still its own)."""
    owners = registry.live_owners(session, source.namespace, [r.name for r in rows])
    for row in rows:
        if owners.get(row.name) == source.name:
            delete_card(session, source.namespace, row.name)
    repository.retire(session, rows)
