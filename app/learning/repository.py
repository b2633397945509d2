"""The SQL of learning from reports: the stored models of each namespace and its switch.

A change of what serves (a promotion, a rollback) is announced on ``LEARNING_CHANNEL`` in
its own transaction, like a registry write (``registry.repository.next_revision``): on
Postgres every replica hears of it at commit and loads the serving model; the poll is the
fallback.

Bounded storage (``prune``, after every judgement and rollback, and by ``toolreach purge``):
a namespace keeps the weights of its serving and its previous model only (a refused
challenger's are never stored), and the newest ``KEPT_VERDICTS`` verdicts besides.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import ColumnElement, delete, func, select, update
from sqlalchemy.orm import Session

from app.learning.models import REFUSED, RETIRED, SERVING, LearnedModel, LearningSwitch
from app.routing.calibration import Calibration
from app.routing.reranker import DEPTH, Learned, Reranker

LEARNING_CHANNEL = "toolreach_learning"
ROLLED_BACK = "rolled_back"  # served, then an admin rolled it back: never served again by one
KEPT_VERDICTS = 20  # a namespace's newest verdicts kept beside its serving and previous model


@dataclass(frozen=True, slots=True)
class ServingRow:
    namespace: str
    version: int
    scoped: bool  # judged with whose routes it may move (False: before the rule)


def announce(session: Session, namespace: str) -> None:
    """Tell every replica (at commit) that ``namespace``'s serving model changed."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(select(func.pg_notify(LEARNING_CHANNEL, namespace)))


def serving_versions(session: Session) -> list[ServingRow]:
    """Which version serves in each namespace that has one (no weights read)."""
    rows = session.execute(
        select(
            LearnedModel.namespace, LearnedModel.version, LearnedModel.confirmed.is_not(None)
        ).where(LearnedModel.state == SERVING)
    )
    return [ServingRow(ns, version, bool(scoped)) for ns, version, scoped in rows]


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


def as_learned(row: LearnedModel, vectors_of: Callable[[list[str]], np.ndarray]) -> Learned:
    """The stored model as ``route`` reads it (its reported steps' vectors from
    ``vectors_of``); ValueError for a row with no weights, or an adapter's from before the
    reranker. A model judged before bounded influence (``confirmed`` None) moves no tool."""
    if row.weights is None:
        raise ValueError(f"model {row.version} of {row.namespace!r} holds no weights")
    ranker = Reranker.from_bytes(row.weights, vectors_of)
    calibration = None if row.calibration is None else Calibration.from_json(row.calibration)
    return Learned(
        ranker,
        version=row.version,
        calibration=calibration,
        confirmed=frozenset(row.confirmed or ()),
        own={key: frozenset(tools) for key, tools in (row.own or {}).items()},
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
    """Store a judged challenger (its weights only if promoted); a promoted one serves, the
    one that served retires, and the namespace's rows are pruned (``prune``)."""
    if promoted:
        retire_serving(session, namespace, RETIRED)
    ranker = None if learned is None else learned.ranker
    calibration = None if learned is None or learned.calibration is None else learned.calibration
    confirmed = None if learned is None or learned.confirmed is None else learned.confirmed
    row = LearnedModel(
        namespace=namespace,
        version=version,
        dim=dim if ranker is None else ranker.dim,
        weights=ranker.to_bytes() if ranker is not None and promoted else None,
        digest=None if ranker is None else ranker.digest(),
        tools=[] if ranker is None else sorted(ranker.tools),
        confirmed=None if confirmed is None else sorted(confirmed),
        own=None if learned is None else {k: sorted(t) for k, t in sorted(learned.own.items())},
        calibration=None if calibration is None else calibration.to_json(),
        weight=0.0 if ranker is None else ranker.delta,  # the gate
        pool=DEPTH if ranker is None else ranker.depth,
        relative=False,
        verdict=verdict,
        steps=steps,
        state=SERVING if promoted else REFUSED,
        created_at=now,
        served_at=now if promoted else None,
    )
    session.add(row)
    session.flush()
    prune(session, namespace)
    if promoted:
        announce(session, namespace)
    return row


def retire_serving(session: Session, namespace: str, state: str) -> None:
    session.execute(
        update(LearnedModel)
        .where(LearnedModel.namespace == namespace, LearnedModel.state == SERVING)
        .values(state=state)
    )


def previous(session: Session, namespace: str) -> LearnedModel | None:
    """The retired model that served last, if its weights are kept (and it was judged with
    bounded influence): what a rollback serves."""
    return session.scalar(
        select(LearnedModel)
        .where(
            LearnedModel.namespace == namespace,
            LearnedModel.state == RETIRED,
            LearnedModel.weights.is_not(None),
            LearnedModel.confirmed.is_not(None),
        )
        .order_by(LearnedModel.served_at.desc(), LearnedModel.version.desc())
        .limit(1)
    )


def rollback(session: Session, namespace: str, now: datetime) -> LearnedModel | None:
    """Serve the previous model again (the serving one is rolled back, and no rollback
    serves it again); None, changing nothing, when there is none."""
    restored = previous(session, namespace)
    if restored is None:
        return None
    retire_serving(session, namespace, ROLLED_BACK)
    restored.state, restored.served_at = SERVING, now
    session.flush()
    prune(session, namespace)
    announce(session, namespace)
    return restored


def prune(session: Session, namespace: str, before: datetime | None = None) -> int:
    """Drop the weights of every model of ``namespace`` but the serving and the previous
    one, and delete the verdicts beyond the newest ``KEPT_VERDICTS`` (and, with ``before``,
    those judged before it, the newest one kept); the rows deleted."""
    served = serving(session, namespace)
    back = previous(session, namespace)
    held = [row.id for row in (served, back) if row is not None]
    session.execute(
        update(LearnedModel)
        .where(
            LearnedModel.namespace == namespace,
            LearnedModel.weights.is_not(None),
            LearnedModel.id.not_in(held),
        )
        .values(weights=None)
    )
    recent = select(LearnedModel.id).where(LearnedModel.namespace == namespace)
    newest = list(
        session.scalars(recent.order_by(LearnedModel.version.desc()).limit(KEPT_VERDICTS))
    )
    stale: ColumnElement[bool] = LearnedModel.id.not_in(newest)
    if before is not None:
        stale = stale | (LearnedModel.created_at < before)
    gone = session.execute(
        delete(LearnedModel).where(
            LearnedModel.namespace == namespace, LearnedModel.id.not_in(held + newest[:1]), stale
        )
    )
    session.flush()
    return int(gone.rowcount or 0)  # type: ignore[attr-defined]


def namespaces(session: Session) -> list[str]:
    """The namespaces with a stored model or verdict."""
    return list(session.scalars(select(LearnedModel.namespace).distinct()))


def newest(session: Session, namespace: str) -> LearnedModel | None:
    """The namespace's last judged model, whatever became of it."""
    rows: Sequence[LearnedModel] = history(session, namespace, 1)
    return rows[0] if rows else None


def judged_last(session: Session, namespace: str) -> bool:
    """Whether the serving model of ``namespace`` is also its newest judgement."""
    last = newest(session, namespace)
    return last is not None and last.state == SERVING


def last_trained(session: Session) -> dict[str, datetime]:
    """Namespace → when its last model was judged."""
    rows = session.execute(
        select(LearnedModel.namespace, func.max(LearnedModel.created_at)).group_by(
            LearnedModel.namespace
        )
    )
    return {ns: at for ns, at in rows}
