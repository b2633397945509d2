"""Keeping the event tables bounded: delete route events and feedback older than a cut-off."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session, sessionmaker

from app.db import unit_of_work
from app.loop import repository as event_repository

PURGE_CHUNK = 5_000  # routes per transaction: short locks, steady progress


@dataclass(frozen=True, slots=True)
class PurgeResult:
    routes: int
    orphan_feedback: int  # feedback whose route event was gone (or never landed)


def count_purgeable(factory: sessionmaker[Session], before: datetime) -> int:
    with unit_of_work(factory) as session:
        return event_repository.count_old_routes(session, before)


def purge(
    factory: sessionmaker[Session],
    before: datetime,
    progress: Callable[[int], None] | None = None,
    chunk: int = PURGE_CHUNK,
) -> PurgeResult:
    """Delete routes older than `before` (with their candidates and feedback), chunk by chunk."""
    routes = 0
    while True:
        with unit_of_work(factory) as session:
            ids = event_repository.old_route_ids(session, before, chunk)
            if ids:
                event_repository.delete_routes(session, ids)
        if not ids:
            break
        routes += len(ids)
        if progress is not None:
            progress(len(ids))
    with unit_of_work(factory) as session:
        orphans = event_repository.delete_old_feedback(session, before)
    return PurgeResult(routes, orphans)
