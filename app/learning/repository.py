"""The SQL of learning from reports: the stored models of each namespace and its switch.

A change of what serves (a promotion, a rollback) is announced on ``LEARNING_CHANNEL`` in
its own transaction, like a registry write (``registry.repository.next_revision``): on
Postgres every replica hears of it at commit and loads the serving model; the poll is the
fallback.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from app.learning.models import REFUSED, RETIRED, SERVING, LearnedModel, LearningSwitch
from app.routing.adapter import LEARNED_POOL, LEARNED_WEIGHT, Adapter, Learned
from app.routing.calibration import Calibration

LEARNING_CHANNEL = "toolreach_learning"
ROLLED_BACK = "rolled_back"  # served, then an admin rolled it back: never served again by one


@dataclass(frozen=True, slots=True)
class ServingRow:
    namespace: str
    version: int


def announce(session: Session, namespace: str) -> None:
    """Tell every replica (at commit) that ``namespace``'s serving model changed."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(select(func.pg_notify(LEARNING_CHANNEL, namespace)))


def serving_versions(session: Session) -> list[ServingRow]:
    """Which version serves in each namespace that has one (no weights read)."""
    rows = session.execute(
        select(LearnedModel.namespace, LearnedModel.version).where(LearnedModel.state == SERVING)
    )
    return [ServingRow(ns, version) for ns, version in rows]


def switched_off(session: Session) -> frozenset[str]:
    """The namespaces an admin switched learning off in."""
    rows = session.scalars(
        select(LearningSwitch.namespace).where(LearningSwitch.enabled.is_(False))
    )
    return frozenset(rows)


def set_switch(session: Session, namespace: str, enabled: bool, now: datetime) -> None:
    switch = session.get(LearningSwitch, namespace)
    if switch is None:
        session.add(LearningSwitch(namespace=namespace, enabled=enabled, updated_at=now))
    else:
        switch.enabled, switch.updated_at = enabled, now
    session.flush()


def is_enabled(session: Session, namespace: str) -> bool:
    switch = session.get(LearningSwitch, namespace)
    return switch is None or switch.enabled


def model(session: Session, namespace: str, version: int) -> LearnedModel | None:
    return session.scalar(
        select(LearnedModel).where(
            LearnedModel.namespace == namespace, LearnedModel.version == version
        )
    )


def serving(session: Session, namespace: str) -> LearnedModel | None:
    return session.scalar(
        select(LearnedModel).where(
            LearnedModel.namespace == namespace, LearnedModel.state == SERVING
        )
    )


def history(session: Session, namespace: str, limit: int) -> list[LearnedModel]:
    """The namespace's newest ``limit`` models, newest first."""
    return list(
        session.scalars(
            select(LearnedModel)
            .where(LearnedModel.namespace == namespace)
            .order_by(LearnedModel.version.desc())
            .limit(limit)
        )
    )


def next_version(session: Session, namespace: str) -> int:
    latest = session.scalar(
        select(func.max(LearnedModel.version)).where(LearnedModel.namespace == namespace)
    )
    return (latest or 0) + 1


def digest(row: LearnedModel) -> str | None:
    """``Adapter.digest`` of the stored weights, without reading them into a matrix."""
    if row.weights is None:
        return None
    return hashlib.sha256(row.weights).hexdigest()[:16]


def as_learned(row: LearnedModel) -> Learned:
    """The stored model as ``route`` reads it; ValueError for a row with no weights."""
    if row.weights is None:
        raise ValueError(f"model {row.version} of {row.namespace!r} holds no weights")
    adapter = Adapter.from_bytes(row.weights, row.dim, row.tools)
    calibration = None if row.calibration is None else Calibration.from_json(row.calibration)
    return Learned(
        adapter,
        weight=row.weight,
        pool=row.pool,
        version=row.version,
        relative=row.relative,
        calibration=calibration,
    )


def add_model(
    session: Session,
    namespace: str,
    version: int,
    learned: Learned | None,
    dim: int,
    verdict: dict[str, object],
    steps: int,
    promoted: bool,
    now: datetime,
) -> LearnedModel:
    """Store a judged challenger; a promoted one serves, and the one that served retires."""
    if promoted:
        retire_serving(session, namespace, RETIRED)
    adapter = None if learned is None else learned.adapter
    calibration = None if learned is None or learned.calibration is None else learned.calibration
    row = LearnedModel(
        namespace=namespace,
        version=version,
        dim=dim if adapter is None else adapter.dim,
        weights=None if adapter is None else adapter.to_bytes(),
        tools=[] if adapter is None else sorted(adapter.tools),
        calibration=None if calibration is None else calibration.to_json(),
        weight=LEARNED_WEIGHT if learned is None else learned.weight,
        pool=LEARNED_POOL if learned is None else learned.pool,
        relative=False if learned is None else learned.relative,
        verdict=verdict,
        steps=steps,
        state=SERVING if promoted else REFUSED,
        created_at=now,
        served_at=now if promoted else None,
    )
    session.add(row)
    session.flush()
    if promoted:
        announce(session, namespace)
    return row


def retire_serving(session: Session, namespace: str, state: str) -> None:
    session.execute(
        update(LearnedModel)
        .where(LearnedModel.namespace == namespace, LearnedModel.state == SERVING)
        .values(state=state)
    )


def rollback(session: Session, namespace: str, now: datetime) -> LearnedModel | None:
    """Serve the retired model that served last again (the serving one is rolled back, and
    no rollback serves it again); None, changing nothing, when there is none."""
    previous = session.scalar(
        select(LearnedModel)
        .where(LearnedModel.namespace == namespace, LearnedModel.state == RETIRED)
        .order_by(LearnedModel.served_at.desc(), LearnedModel.version.desc())
        .limit(1)
    )
    if previous is None:
        return None
    retire_serving(session, namespace, ROLLED_BACK)
    previous.state, previous.served_at = SERVING, now
    session.flush()
    announce(session, namespace)
    return previous


def newest(session: Session, namespace: str) -> LearnedModel | None:
    """The namespace's last judged model, whatever became of it."""
    rows: Sequence[LearnedModel] = history(session, namespace, 1)
    return rows[0] if rows else None


def last_trained(session: Session) -> dict[str, datetime]:
    """Namespace → when its last model was judged."""
    rows = session.execute(
        select(LearnedModel.namespace, func.max(LearnedModel.created_at)).group_by(
            LearnedModel.namespace
        )
    )
    return {ns: at for ns, at in rows}
