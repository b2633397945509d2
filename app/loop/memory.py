"""Query memory: the steps that used a tool successfully become evidence for it.

Which reports count (``remembered_reports`` reads them; ``docs/ROUTING.md``, "Query
memory"):

* a report naming a tool with outcome ``success``, or a call validated through
  ``/v1/validate`` whose outcome is still unknown (not contradicted); an ``error`` outcome,
  "none fit" and a contradicted report (refused with 409, so never stored) add nothing;
* the step's text must be stored: with ``hash_queries`` on, events keep only a hash, and
  there is nothing to embed (such a namespace has no memory);
* the tool must exist now, and the report must be made since the tool's current *substance*
  began (``substance_since``): a card's substance is the names of its parameters and which
  of them are required. A new version with the same substance (a reworded description,
  new examples, tags, types or formats) keeps the memory; one that adds, removes, renames a
  parameter or changes which are required drops every report made before it, as if
  forgotten (the steps that fitted the old call may not fit the new one); reports after it
  are remembered as usual;
* a step an admin forgot, or any step of a tool forgotten whole before the mark, is gone.

Each report is the evidence of one key (``app/loop/trust.py``). Its weight halves every
``half_life_days`` (the prior's). Then the caps:

* one step text (normalised) counts at most 1 per tool, however often it is reported: a
  flood of identical reports moves nothing more than one;
* one key holds at most ``KEY_STEPS`` distinct steps of one tool (its heaviest): varying
  its texts, one client cannot spread a tool's memory over every kind of step. (A step's
  vote is its best match, never a sum, so what one key adds to a tool is bounded by
  ``memory_weight`` in any case: ``app/routing/memory.py``.)
* bounded influence: a step counts at its full weight in the routes of the keys that
  reported it; in any other key's at ``min(1, keys / trust_keys)`` of it (``keys``: the
  distinct keys that reported that tool for that step). ``MemoryCache.get`` is the memory
  every key sees; ``MemoryCache.own`` a key's unconfirmed steps at full weight, which its
  routes vote with too (the better vote counts).

:class:`MemoryCache` rebuilds every namespace's :class:`QueryMemory` in the background and
swaps it in whole; step vectors are embedded in batches with the service's encoder and kept
in the embeddings table by text hash, so a restart embeds nothing twice. Routes only read.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from types import MappingProxyType
from typing import Any

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from app.db import unit_of_work
from app.keys.scope import require_writable
from app.loop import repository as event_repository
from app.loop.repository import ForgetMark, MemoryReport
from app.loop.trust import ANONYMOUS, agreement, evidence_key, normalise_text
from app.routing.memory import QueryMemory
from app.tools.catalog import text_hash
from app.tools.examples import TextEncoder as Encoder
from app.tools.examples import text_vectors
from registry import repository as card_repository
from registry.errors import NotFound

log = logging.getLogger("toolreach.memory")


def decay(age_days: float, half_life_days: float) -> float:
    """Exponential decay: 1 today, 1/2 after one half-life."""
    return float(0.5 ** (max(age_days, 0.0) / half_life_days))


HORIZON_HALF_LIVES = 10  # older reports weigh under 1/1000: not read at all
KEY_STEPS = 32  # one key holds at most this many distinct steps of one tool
TEXT_CAP = 1.0  # one step text weighs at most this much for one tool


@dataclass(frozen=True, slots=True)
class RememberedStep:
    """One distinct step text remembered for a tool: its weight after decay and caps, how
    many reports back it, the newest one's route id and time, and the keys whose evidence
    it is (``trust.evidence_key``)."""

    tool: str
    text: str
    weight: float
    reports: int
    route_id: str
    last_seen: datetime
    keys: frozenset[str] = frozenset()

    def shared(self, needed: int) -> float:
        """Its weight in the routes of a key that did not report it (``trust.agreement``)."""
        return self.weight * agreement(len(self.keys), needed)


def step_hash(text: str) -> str:
    """The hash a forget mark names a step text by (its normalised form's)."""
    return text_hash(normalise_text(text))


def forgotten(report: MemoryReport, marks: Sequence[ForgetMark]) -> bool:
    """Whether an admin forgot this report: a mark on its tool (whole, or its step text)
    made after it."""
    return any(
        mark.tool == report.chosen
        and report.created_at <= mark.created_at
        and (mark.text_hash is None or mark.text_hash == step_hash(report.query))
        for mark in marks
    )


def substance(parameters: Mapping[str, Any]) -> tuple[frozenset[str], frozenset[str]]:
    """What makes two versions of a card the same tool for memory: its parameters' names
    and which of them are required (module doc)."""
    properties = parameters.get("properties")
    required = parameters.get("required")
    names = frozenset(properties) if isinstance(properties, Mapping) else frozenset()
    needed = frozenset(str(r) for r in required) if isinstance(required, list) else frozenset()
    return names, needed


def substance_since(history: Sequence[tuple[datetime, Mapping[str, Any]]]) -> datetime | None:
    """When the current substance began: the written-at of the version after the latest one
    whose substance differs from the newest's (``history``: (written at, parameters) of
    every version, oldest first); ``None`` when every version has it."""
    if not history:
        return None
    current = substance(history[-1][1])
    since = None
    for (_, before), (written_at, _) in pairwise(history):
        if substance(before) != current:
            since = written_at
    return since


def remembered_steps(
    reports: Iterable[MemoryReport],
    now: datetime,
    half_life_days: float,
    live: Callable[[str], bool],
    marks: Sequence[ForgetMark] = (),
    since: Mapping[str, datetime] = MappingProxyType({}),
) -> list[RememberedStep]:
    """One namespace's reports → its remembered steps, decayed and capped (module doc).
    ``live(tool)``: whether the tool exists now; ``marks``: the namespace's forget marks;
    ``since``: when each changed tool's current substance began (``substance_since``)."""
    weight: dict[tuple[str, str], float] = defaultdict(float)
    by_key: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    count: dict[tuple[str, str], int] = defaultdict(int)
    keys: dict[tuple[str, str], set[str]] = defaultdict(set)
    newest: dict[tuple[str, str], MemoryReport] = {}
    for report in reports:
        if report.query.startswith("sha256:") or not live(report.chosen):
            continue
        if report.chosen in since and report.created_at <= since[report.chosen]:
            continue  # made before the tool's current substance: forgotten
        if marks and forgotten(report, marks):
            continue
        text = normalise_text(report.query)
        if not text:
            continue
        at = (report.chosen, text)
        age = (now - report.created_at).total_seconds() / 86_400
        key = evidence_key(report.key_id, None)
        by_key[(report.chosen, key)][text] += decay(age, half_life_days)
        count[at] += 1
        if at not in newest or report.created_at > newest[at].created_at:
            newest[at] = report
    for (tool, key), texts in by_key.items():
        heaviest = sorted(texts.items(), key=lambda item: (-item[1], item[0]))[:KEY_STEPS]
        for text, w in heaviest:
            weight[(tool, text)] += min(w, TEXT_CAP)
            keys[(tool, text)].add(key)
    return [
        RememberedStep(
            tool,
            newest[(tool, text)].query,
            min(w, TEXT_CAP),
            count[(tool, text)],
            newest[(tool, text)].route_id,
            newest[(tool, text)].created_at,
            frozenset(keys[(tool, text)]),
        )
        for (tool, text), w in sorted(weight.items())
        if w > 0
    ]


def substance_changes(
    session: Session, namespace: str, tools: Iterable[str]
) -> dict[str, datetime]:
    """When the current substance of each of ``tools`` that ever changed it began."""
    history = card_repository.parameter_history(session, namespace, tools)
    began = {tool: substance_since(versions) for tool, versions in history.items()}
    return {tool: at for tool, at in began.items() if at is not None}


@dataclass(frozen=True)
class NamespaceMemory:
    """What a namespace remembers: the router's matrix and the steps behind it (the
    dashboard and the admin API read them)."""

    memory: QueryMemory | None
    steps: tuple[RememberedStep, ...]
    own: Mapping[str, QueryMemory] = field(default_factory=dict)  # key → unconfirmed steps


def build_memory(
    steps: Sequence[RememberedStep], vectors: np.ndarray, dims: int, needed: int
) -> NamespaceMemory:
    """The memory every key sees (each step at its ``shared`` weight) and, for each key
    with steps fewer than ``needed`` keys confirm, those steps at full weight, on the
    same basis (``QueryMemory.build``)."""
    tools = [s.tool for s in steps]
    shared = np.array([s.shared(needed) for s in steps], dtype=np.float32)
    memory = QueryMemory.build(tools, vectors, shared, dims)
    basis = None if memory is None else memory.basis
    rows: dict[str, list[int]] = defaultdict(list)
    for i, step in enumerate(steps):
        if shared[i] < step.weight:
            for key in step.keys:
                rows[key].append(i)
    own = {}
    for key, picked in rows.items():
        full = np.array([steps[i].weight for i in picked], dtype=np.float32)
        mine = QueryMemory.build([tools[i] for i in picked], vectors[picked], full, 0, basis)
        if mine is not None:
            own[key] = mine
    return NamespaceMemory(memory, tuple(steps), MappingProxyType(own))


class MemoryCache:
    """Per-namespace query memory, rebuilt off the request path; reads never block."""

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        encoder: Encoder,
        half_life_days: float,
        live: Callable[[str, str], bool],
        dims: int = 0,
        needed: int = 1,
    ) -> None:
        self._factory = session_factory
        self.dims = dims  # principal directions the steps are kept on (0: every one)
        self.needed = needed  # trust_keys: keys that confirm a step for every key
        self._encoder = encoder
        self.half_life_days = half_life_days
        self._live = live  # (namespace, tool) → the tool exists
        self._memories: Mapping[str, NamespaceMemory] = MappingProxyType({})
        # When the memory in use began to be read (None: not yet): what it leaves out was
        # forgotten before then (app/learning/service.py retrains after a forget).
        self.built_at: datetime | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def get(self, namespace: str) -> QueryMemory | None:
        """The namespace's memory as every key sees it (``RememberedStep.shared``)."""
        found = self._memories.get(namespace)
        return None if found is None else found.memory

    def own(self, namespace: str, key: str | None) -> QueryMemory | None:
        """``key``'s unconfirmed steps at full weight (None: no key, ``ANONYMOUS``)."""
        found = self._memories.get(namespace)
        return None if found is None else found.own.get(key or ANONYMOUS)

    def held(self, namespace: str) -> NamespaceMemory | None:
        """What ``namespace`` remembers (the same object until the next rebuild)."""
        return self._memories.get(namespace)

    def steps(self, namespace: str) -> tuple[RememberedStep, ...]:
        found = self._memories.get(namespace)
        return () if found is None else found.steps

    def refresh(self, now: datetime | None = None) -> None:
        """Rebuild every namespace's memory from the reports, then swap it in whole."""
        now = now or datetime.now(UTC)
        since = now - timedelta(days=self.half_life_days * HORIZON_HALF_LIVES)
        built: dict[str, NamespaceMemory] = {}
        with unit_of_work(self._factory) as session:
            grouped: dict[str, list[MemoryReport]] = defaultdict(list)
            for report in event_repository.memory_reports(session, since):
                grouped[report.namespace].append(report)
            marks: dict[str, list[ForgetMark]] = defaultdict(list)
            for mark in event_repository.forget_marks(session):
                marks[mark.namespace].append(mark)
            for namespace, reports in grouped.items():
                steps = remembered_steps(
                    reports,
                    now,
                    self.half_life_days,
                    lambda t, ns=namespace: self._live(ns, t),  # type: ignore[misc]
                    marks.get(namespace, ()),
                    substance_changes(session, namespace, {r.chosen for r in reports}),
                )
                if not steps:
                    continue
                vectors = np.asarray(
                    text_vectors(session, self._encoder, [s.text for s in steps]),
                    dtype=np.float32,
                )
                built[namespace] = build_memory(steps, vectors, self.dims, self.needed)
        self._memories = MappingProxyType(built)
        self.built_at = now

    def start(self, interval: float) -> None:
        """Rebuild now and every `interval` seconds, in a background thread."""

        def loop() -> None:
            while not self._stop.is_set():
                try:
                    self.refresh()
                except Exception:
                    log.exception("query memory rebuild failed; keeping the previous one")
                self._wake.wait(interval)
                self._wake.clear()

        self._thread = threading.Thread(target=loop, name="query-memory", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Rebuild now, on the background thread (after a forget is committed)."""
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def forget(
    session: Session,
    cache: MemoryCache,
    namespace: str,
    tool: str,
    route_id: str | None = None,
    writable: Collection[str] | None = None,
) -> None:
    """Mark a tool's memory forgotten: one remembered step (the one ``route_id`` reported,
    ``MemoryCache.steps``: every report of that step's text before now), or all of it.
    Stored, so it holds on every replica and after a restart; the memory is rebuilt
    without it (``MemoryCache.wake``, once committed). NotFound for a step the tool does
    not remember; Forbidden out of the key's scope."""
    require_writable(namespace, writable)
    digest = None
    if route_id is not None:
        step = next(
            (s for s in cache.steps(namespace) if s.tool == tool and s.route_id == route_id), None
        )
        if step is None:
            raise NotFound(
                f"tool {tool!r} of namespace {namespace!r} remembers no step reported by "
                f"route {route_id!r}"
            )
        digest = step_hash(step.text)
    mark = ForgetMark(namespace, tool, digest, datetime.now(UTC))
    event_repository.add_forget_mark(session, mark)
