"""The replay: reported steps routed again through the real pipeline against a shadow copy
of a namespace's index with a finding's changes applied. The live index is never touched:
the shadow is built from the snapshot's rows, with the changed cards embedded anew by the
service's encoder. Each step is embedded once per computation (``StepVectors``): a replay
of many findings costs routes, not model calls. Off the request path (app/advice/room.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from app.advice.finding import Case, Finding, edited
from app.advice.kinds import findings
from app.advice.standing import STAGE_WORDS, Standing, held_by
from app.embedding.encoders import Encoder, l2_normalise, multilingual_dims
from app.routing import (
    Candidate,
    NamespaceView,
    RouteOptions,
    Router,
    RouterIndex,
    embedding_text,
    query_texts,
)
from app.routing.segments import IndexSegment
from app.tools.catalog import card_to_doc
from registry.card import ToolCard

STAND_DEPTH = 100  # how deep a case's step is routed again to find its used tool
ANSWER_K = 3  # the route's default k: a used tool below it was not offered


class OutOfTime(Exception):
    """The computation's budget ran out, or the service is stopping (``StepVectors``)."""


class StepVectors:
    """An encoder that remembers what it embedded: each step's texts are embedded once, in
    batches (``warm``), however many findings replay them; cards pass through. Every route of
    a replay asks it for its step's vectors, so it is where the budget is kept: once
    ``spent()`` says so, it raises ``OutOfTime``."""

    def __init__(self, encoder: Encoder, spent: Callable[[], bool] = lambda: False) -> None:
        self.encoder, self._spent = encoder, spent
        self.name, self.dim = encoder.name, encoder.dim
        self.multilingual_dims = multilingual_dims(encoder)
        self._rows: dict[str, np.ndarray] = {}

    def warm(self, queries: Sequence[str]) -> None:
        texts = list(dict.fromkeys(t for q in queries for t in query_texts(q)))
        new = [t for t in texts if t not in self._rows]
        for start in range(0, len(new), 64):  # in batches, the budget checked between
            if self._spent():
                raise OutOfTime
            batch = new[start : start + 64]
            rows = np.asarray(self.encoder.encode(batch), dtype=np.float32)
            self._rows.update(zip(batch, rows, strict=True))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self._spent():
            raise OutOfTime
        missing = [t for t in texts if t not in self._rows]
        if missing:
            return np.asarray(self.encoder.encode(texts), dtype=np.float32)
        return np.stack([self._rows[t] for t in texts])


@dataclass(frozen=True)
class Replay:
    checked: int
    fixed: int
    broken: int
    won: int = 0  # cases an edited tool comes first for only after (fixed ones included)

    def offered(self) -> bool:
        """At least one case fixed, none broken, and no case won for an edited tool beyond
        the fixed ones: an edit that only wins usage for its tool (the gaming case) is not."""
        return self.refused() is None

    def refused(self) -> str | None:
        """Why the replay refuses the edit (None: offered): it broke a case, fixed none, or
        won more cases for its tools than it fixed (gaming); the first that holds."""
        if self.broken:
            return "broke"
        if self.fixed < 1:
            return "fixed_nothing"
        return "gaming" if self.won > self.fixed else None

    def reason(self, misroutes: int) -> str:
        """The refusal as a sentence (``misroutes``: the finding's own wrong steps)."""
        why = self.refused()
        if why == "broke":
            return f"refused: the edit broke {self.broken} right step(s)"
        if why == "fixed_nothing":
            return f"refused: the edit fixed none of the {misroutes} misroute(s)"
        return f"refused: the edit wins {self.won} step(s) for its tools and fixes {self.fixed}"


def shadow(index: RouterIndex, encoder: Encoder, edited: Mapping[str, ToolCard]) -> RouterIndex:
    """``index`` with the edited cards in place of their rows (a new index)."""
    if not edited:
        return index
    names = sorted(edited)
    vectors = l2_normalise(encoder.encode([embedding_text(card_to_doc(edited[n])) for n in names]))
    docs = (card_to_doc(edited[n]) for n in names)
    segment = IndexSegment.analyse(docs, vectors, index.config.fields)
    merged, _ = index.merged(names, segment)
    return merged


def ranked(index: RouterIndex, encoder: Encoder, query: str, k: int) -> list[Candidate]:
    """The top ``k`` of ``query``, embedded as a route embeds a step (its texts:
    ``query_texts``, one model call; none with ``StepVectors`` warmed)."""
    texts = query_texts(query)
    vectors = np.asarray(encoder.encode(texts), dtype=np.float32) if texts else None
    view = NamespaceView(index)
    return Router(index.config).route(view, query, vectors, RouteOptions(k=k), texts=texts)


def firsts(index: RouterIndex, encoder: Encoder, queries: Sequence[str]) -> list[str | None]:
    """The tool each query routes to first (None: none)."""
    out: list[str | None] = []
    for query in queries:
        found = ranked(index, encoder, query, 1)
        out.append(found[0].name if found else None)
    return out


def standing(found: Sequence[Candidate], chosen: str, depth: int) -> Standing:
    """Where ``chosen`` stands in a deep answer ``found`` (``standing.Standing``)."""
    first, first_stages = (found[0].name, dict(found[0].stages)) if found else ("", {})
    for rank, c in enumerate(found, 1):
        if c.name == chosen:
            return Standing(rank, dict(c.stages), c.missing_required, first, first_stages, depth)
    return Standing(None, {}, (), first, first_stages, depth)


def standings(
    index: RouterIndex, encoder: Encoder, cases: Sequence[Case], depth: int = STAND_DEPTH
) -> dict[tuple[str, str], Standing]:
    """Each wrong case's used tool, routed again ``depth`` deep on the present index, keyed
    ``(query, used tool)``: what says whether the penalty sank it, or which stage kept it
    out (the recorded stages are of the cards then; a tool not offered has none)."""
    depth = min(depth, len(index))
    out: dict[tuple[str, str], Standing] = {}
    for case in cases:
        key = (case.query, case.chosen)
        if case.first != case.chosen and key not in out:
            out[key] = standing(ranked(index, encoder, case.query, depth), case.chosen, depth)
    return out


def observed(
    index: RouterIndex, encoder: Encoder, cases: Sequence[Case], k: int = ANSWER_K
) -> tuple[list[Case], dict[tuple[str, str], Standing]]:
    """The cases as routing them now would record them (the first tool, whether the used one
    is among the top ``k``), with their standings: reports made without a service."""
    depth = min(STAND_DEPTH, len(index))
    now, stands = [], {}
    for case in cases:
        found = ranked(index, encoder, case.query, depth)
        first = found[0].name if found else ""
        offered = case.chosen in {c.name for c in found[:k]}
        now.append(Case(case.query, first, case.chosen, offered, case.key))
        if first != case.chosen:
            stands[(case.query, case.chosen)] = standing(found, case.chosen, depth)
    return now, stands


def kept_first(
    index: RouterIndex, encoder: Encoder, edited: Mapping[str, ToolCard], finding: Finding
) -> str:
    """Why an edit fixed none of its finding's steps: the stage that, on the edited cards,
    keeps the first tool ahead of the used one most often ("" when none is read)."""
    edited_index = shadow(index, encoder, edited)
    depth = min(STAND_DEPTH, len(edited_index))
    right = finding.tools[1]
    stands = [
        standing(ranked(edited_index, encoder, q, depth), right, depth) for q in finding.steps
    ]
    stage = held_by([s for s in stands if s.rank != 1])
    if stage is None:
        return ""
    said = STAGE_WORDS.get(stage, stage)
    return f"; with it, {right} still ranks below {finding.tools[0]}, kept out by {said}"


def replay(
    index: RouterIndex,
    encoder: Encoder,
    cases: Sequence[Case],
    edited: Mapping[str, ToolCard],
    before: Sequence[str | None] | None = None,
) -> Replay:
    """Route every case before and after the edits: a case is fixed when its used tool comes
    first only after, broken when it came first only before, won when an edited tool comes
    first only after. Every reported case is checked, the steps reported for other tools too:
    an edit that wins steps for its tool that were reported for another breaks them, or wins
    more than it fixes (the gaming case). ``before``: the cases' first tools on ``index``,
    when the caller routed them already (one list for many findings)."""
    queries = [c.query for c in cases]
    before = firsts(index, encoder, queries) if before is None else before
    after = firsts(shadow(index, encoder, edited), encoder, queries)
    fixed = broken = won = 0
    for case, was, now in zip(cases, before, after, strict=True):
        fixed += was != case.chosen and now == case.chosen
        broken += was == case.chosen and now != case.chosen
        won += now in edited and was != now
    return Replay(len(cases), fixed, broken, won)


def heal(
    index: RouterIndex,
    cards: Mapping[str, ToolCard],
    encoder: Encoder,
    cases: Sequence[Case],
    rounds: int = 10,
    needed: int = 1,
) -> tuple[RouterIndex, dict[str, ToolCard], list[Finding], int]:
    """Apply every finding the replay offers, worst first, each replayed on the cards as the
    ones before it left them, for up to ``rounds`` passes: the index and cards after, the
    findings applied, and how many the last pass refused. (What applying each offered advice
    in turn does, without a database: the measured test and bench/quality/advice_eval.py.)"""
    current, applied, refused = dict(cards), [], 0
    steps = StepVectors(encoder)
    steps.warm([c.query for c in cases])
    for _ in range(rounds):
        now, stands = observed(index, steps, cases)
        before = firsts(index, steps, [c.query for c in cases])  # as replay routes them
        progressed, refused = False, 0
        for finding in findings(current, now, None, stands, needed)[0]:
            changed = edited(current, finding.changes)
            result = replay(index, steps, now, changed, before)
            finding.replay = {"checked": result.checked, "fixed": result.fixed, "broken": 0}
            if not result.offered():
                refused += 1
                continue
            index, progressed = shadow(index, steps, changed), True
            current.update(changed)
            applied.append(finding)
            break  # the others are found again on the new state
        if not progressed:
            break
    return index, current, applied, refused
