"""What ``/v1/advice`` does: the namespace's reported steps (app/loop), findings from them
(``kinds.py``: confusions, misses, parameter problems), each checked by replay (``replay.py``)
and offered only if it fixes at least one case and breaks none (with ``HELD_OUT_SHARE``
and enough steps, one of the newest ones it was not made from: a time split); and
applying one, re-checked first, through the registry's write path (the session dependency
commits)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sqlalchemy.orm import Session

from app.advice.doctor import Case, Finding, edited
from app.advice.kinds import findings
from app.advice.replay import Replay, firsts, replay, standings
from app.embedding.encoders import Encoder
from app.loop import stats_repository as sql
from app.tools.catalog import write_cards
from app.tools.live_index import IndexManager
from registry import repository
from registry.errors import Conflict, NotFound

MAX_CASES = 2000  # the newest reported steps a replay reads
# The newest share of the reported steps held out of the findings (a time split, as the
# learning guard's): a finding is made from the older steps and offered only if it also
# fixes one of the newer ones, so an edit must generalise. Fewer than MIN_HELD_OUT newer
# steps: no split (every step makes the findings). Off: on MetaTool it kept held-out hit@1
# (668 -> 668) but halved the reported gain; the "Not for" line without the steps' words
# (doctor.NOT_FOR) kept it better (docs/BENCHMARKS.md; bench.quality.advice_sets --held-out).
HELD_OUT_SHARE = 0.0
MIN_HELD_OUT = 10


def _stage(stages: Any) -> str:
    """The recorded stage that gave the wrong first tool most of its score."""
    if not isinstance(stages, Mapping):
        return "ranking"
    parts = {k: v for k, v in stages.items() if isinstance(v, int | float)}
    return max(parts, key=lambda k: parts[k]) if parts else "ranking"


def reported(session: Session, namespace: str) -> tuple[list[Case], dict[str, str]]:
    """The reported cases (was the used tool offered: the feedback's rank) and, per wrong
    (first, used) pair, the recorded stage that gave the first most of its score."""
    rows = sql.reported_steps(session, namespace, MAX_CASES)
    cases = [Case(q, first, chosen, rank is not None) for q, first, chosen, _, rank in rows]
    stages = {f"{f}|{c}": _stage(st) for _, f, c, st, _ in rows if f != c}
    return cases, stages


def held_out(cases: int) -> int:
    """How many of the newest ``cases`` are held out of the findings (0: too few)."""
    held = round(cases * HELD_OUT_SHARE)
    return held if held >= MIN_HELD_OUT else 0


def checked(
    session: Session,
    index: IndexManager,
    encoder: Encoder,
    namespace: str,
    each: Callable[[list[Finding]], Iterable[Finding]] = iter,
) -> list[tuple[Finding, Replay]]:
    """Every finding of the namespace's reported steps with its replay, worst first: made
    from the steps older than the held-out newest (``held_out``), replayed on them all.
    ``each``: how the findings are gone through (a progress bar, in a bench)."""
    snapshot = index.get(namespace)
    if snapshot is None:
        raise NotFound(f"namespace {namespace!r} holds no tools")
    cases, stages = reported(session, namespace)
    held = held_out(len(cases))  # the newest: cases come newest first
    older = cases[held:]
    stands = standings(snapshot.index, encoder, older)
    before = firsts(snapshot.index, encoder, [c.query for c in cases])
    out = []
    for finding in each(findings(snapshot.cards, older, stages, stands)):
        changed = edited(snapshot.cards, finding.changes)
        result = replay(snapshot.index, encoder, cases, changed, before, held)
        finding.replay = {"checked": result.checked, "fixed": result.fixed, "broken": result.broken}
        out.append((finding, result))
    return out


def advice(
    session: Session, index: IndexManager, encoder: Encoder, namespace: str
) -> list[Finding]:
    """The namespace's findings that the replay lets through, worst first."""
    return [f for f, result in checked(session, index, encoder, namespace) if result.offered()]


def apply(
    session: Session, index: IndexManager, encoder: Encoder, namespace: str, advice_id: str
) -> list[dict[str, Any]]:
    """Write finding ``advice_id``'s changes as new versions of its cards; Conflict if the
    replay, run again on the present state, no longer offers it."""
    snapshot = index.get(namespace)
    found = {f.id: f for f in advice(session, index, encoder, namespace)}
    if advice_id not in found or snapshot is None:
        raise Conflict(f"advice {advice_id!r} no longer holds in {namespace!r}: list it again")
    cards = list(edited(snapshot.cards, found[advice_id].changes).values())
    write_cards(session, encoder, cards)
    written = [repository.get_card(session, namespace, card.name) for card in cards]
    return [{"tool": s.card.name, "version": s.version} for s in written]


def as_json(finding: Finding) -> dict[str, Any]:
    return {
        "id": finding.id,
        "kind": finding.kind,
        "tools": list(finding.tools),
        "cases": finding.cases,
        "steps": finding.steps,
        "diagnosis": finding.diagnosis,
        "changes": [{"tool": c.tool, "field": c.field, "value": c.value} for c in finding.changes],
        "replay": finding.replay,
    }
