"""The card doctor's work, as ``GET /v1/advice``, the dashboard and the CLI do it: read a
namespace's reported steps in one short transaction (``reported``), then, with no database
connection held, make findings of them (``kinds.py``) and replay each (``replay.py``) within
a time budget (``Budget``): offered only if it fixes at least one step and breaks none.
Applying one (``apply``) does it all again on the present state, then writes the edit
through the registry's write path in a transaction of its own. ``room.py`` runs this off
the request path and caches it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from app.advice.finding import Case, Finding, Note, edited
from app.advice.kinds import findings
from app.advice.replay import (
    OutOfTime,
    Replay,
    StepVectors,
    firsts,
    kept_first,
    replay,
    standings,
)
from app.db import unit_of_work
from app.embedding.encoders import Encoder
from app.loop import stats_repository as sql
from app.loop.trust import ANONYMOUS, evidence_key
from app.tools.catalog import write_cards
from app.tools.live_index import IndexManager, Snapshot
from registry import repository
from registry.errors import Conflict, NotFound

MAX_CASES = 500  # the newest reported steps a computation reads
MAX_FINDINGS = 20  # findings replayed in one computation (the most steps first)


@dataclass(frozen=True)
class Budget:
    """How long a computation may run (``seconds``), and a stop that ends it at once (the
    service's shutdown)."""

    seconds: float
    stop: threading.Event = field(default_factory=threading.Event)

    def clock(self) -> Callable[[], bool]:
        """A check that says, at each route, whether the time is spent or a stop came."""
        deadline = time.monotonic() + self.seconds
        return lambda: self.stop.is_set() or time.monotonic() > deadline


@dataclass
class Advice:
    """One computation of a namespace's advice: the findings the replay offers, worst first,
    and a note for every group of wrong steps without one."""

    namespace: str
    findings: list[Finding]
    notes: list[Note]
    steps: int  # reported steps read
    misroutes: int  # of them, the used tool not first
    complete: bool  # False: the budget ran out (or a stop came) before every finding was checked
    seconds: float
    computed_at: datetime
    checked: list[tuple[Finding, Replay]] = field(default_factory=list)


def _stage(stages: Any) -> str:
    """The recorded stage that gave the wrong first tool most of its score."""
    if not isinstance(stages, Mapping):
        return "ranking"
    parts = {k: v for k, v in stages.items() if isinstance(v, int | float)}
    return max(parts, key=lambda k: parts[k]) if parts else "ranking"


def reported(session: Session, namespace: str) -> tuple[list[Case], dict[str, str]]:
    """The reported cases (was the used tool offered: the feedback's rank; whose evidence:
    ``evidence_key``) and, per wrong (first, used) pair, the recorded stage that gave the
    first most of its score."""
    rows = sql.reported_steps(session, namespace, MAX_CASES)
    cases = [
        Case(q, first, chosen, rank is not None, evidence_key(own, route))
        for q, first, chosen, _, rank, own, route in rows
    ]
    stages = {f"{f}|{c}": _stage(st) for _, f, c, st, *_ in rows if f != c}
    return cases, stages


def needed_of(cases: Iterable[Case], trust_keys: int) -> int:
    """The keys a card edit needs: ``trust_keys``, or 1 when no report carries a key (a
    service without keys is one key, and that key is every caller)."""
    return trust_keys if any(c.key != ANONYMOUS for c in cases) else 1


def _unchecked(finding: Finding, why: str) -> Note:
    kind, tools = finding.kind, finding.tools
    return Note(kind, tools, finding.cases, finding.keys, "not_checked", why)


def compute(
    snapshot: Snapshot,
    encoder: Encoder,
    namespace: str,
    read: tuple[list[Case], dict[str, str]],
    trust_keys: int,
    budget: Budget,
) -> Advice:
    """The namespace's advice from its ``read`` reported cases and stages, on ``snapshot``'s
    cards: findings and notes, each finding replayed on every case until the budget runs out
    (the rest are notes: not checked). Pure of the database."""
    started, (cases, stages) = time.monotonic(), read
    steps = StepVectors(encoder, budget.clock())
    needed = needed_of(cases, trust_keys)
    found: list[Finding] = []
    notes: list[Note] = []
    checked: list[tuple[Finding, Replay]] = []
    complete = True
    try:
        steps.warm([c.query for c in cases])
        stands = standings(snapshot.index, steps, cases)
        found, notes = findings(snapshot.cards, cases, stages, stands, needed)
        before = firsts(snapshot.index, steps, [c.query for c in cases])
    except OutOfTime:
        complete = False
    for i, finding in enumerate(found):
        if i >= MAX_FINDINGS:
            notes.append(_unchecked(finding, f"not checked: {MAX_FINDINGS} findings are replayed"))
            continue
        try:
            result = replay(
                snapshot.index, steps, cases, edited(snapshot.cards, finding.changes), before
            )
        except OutOfTime:
            complete = False
            notes.append(
                _unchecked(finding, f"not checked: the budget of {budget.seconds:g} s ran out")
            )
            continue
        finding.replay = {"checked": result.checked, "fixed": result.fixed, "broken": result.broken}
        checked.append((finding, result))
        if not result.offered():
            notes.append(_refused(snapshot, steps, finding, result))
    misroutes = sum(c.first != c.chosen for c in cases)
    offered = [f for f, r in checked if r.offered()]
    seconds = round(time.monotonic() - started, 3)
    now = datetime.now(UTC)
    return Advice(namespace, offered, notes, len(cases), misroutes, complete, seconds, now, checked)


def _refused(snapshot: Snapshot, steps: StepVectors, finding: Finding, result: Replay) -> Note:
    """The note of a finding the replay refused; one that fixed nothing says which stage
    keeps the first tool ahead on the edited cards."""
    reason = result.reason(finding.cases)
    if result.refused() == "fixed_nothing":
        changed = edited(snapshot.cards, finding.changes)
        with suppress(OutOfTime):  # the reason without its stage
            reason += kept_first(snapshot.index, steps, changed, finding)
    code = result.refused() or "refused"
    return Note(finding.kind, finding.tools, finding.cases, finding.keys, code, reason)


def advise(
    factory: sessionmaker[Session],
    index: IndexManager,
    encoder: Encoder,
    namespace: str,
    trust_keys: int,
    budget: Budget,
) -> Advice:
    """Read the namespace's reports (one short transaction), then compute its advice."""
    snapshot = index.get(namespace)
    if snapshot is None:
        raise NotFound(f"namespace {namespace!r} holds no tools", {"namespace": namespace})
    with unit_of_work(factory) as session:
        read = reported(session, namespace)
    return compute(snapshot, encoder, namespace, read, trust_keys, budget)


def apply(
    factory: sessionmaker[Session],
    index: IndexManager,
    encoder: Encoder,
    namespace: str,
    advice_id: str,
    trust_keys: int,
    budget: Budget,
) -> list[dict[str, Any]]:
    """Write finding ``advice_id``'s changes as new versions of its cards; Conflict if the
    replay, run again on the present state, no longer offers it."""
    snapshot = index.get(namespace)
    found = {
        f.id: f for f in advise(factory, index, encoder, namespace, trust_keys, budget).findings
    }
    if advice_id not in found or snapshot is None:
        raise Conflict(f"advice {advice_id!r} no longer holds in {namespace!r}: list it again")
    cards = list(edited(snapshot.cards, found[advice_id].changes).values())
    with unit_of_work(factory) as session:
        write_cards(session, encoder, cards)
        written = [repository.get_card(session, namespace, card.name) for card in cards]
        return [{"tool": s.card.name, "version": s.version} for s in written]
