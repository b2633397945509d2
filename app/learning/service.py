"""Learning from reports, served: each namespace's guarded reranker trained in the background,
stored, and loaded by every replica (issues 29 and 41; the model is
``app/routing/reranker.py``, its training ``training.py``, the guard ``guard.py``).

:class:`LearningCache` is a room of its own, like query memory's (app/loop/memory.py): one
thread, off the request path. Every ``poll`` seconds it loads the stored serving model of
each namespace (only a changed version is read whole), and every ``interval`` seconds it
trains each namespace that has at least ``min_new_steps`` remembered steps newer than its
last training, or whose reports an admin forgot since (``DELETE /v1/memory``; once query
memory is rebuilt without them). It trains on query memory's steps: forgotten reports are
gone, decay and bounded influence applied. The guard judges the challenger against the
serving model; the verdict is stored, refused or not, and a promoted model serves,
retiring the one before it, and is announced (``repository.LEARNING_CHANNEL``) so every
replica loads it at once. A restart
loads the stored model and trains nothing until new steps come. A failure is logged and
the previous model keeps serving; routes only read an immutable mapping.

``get(namespace)`` is what a route reads (through its namespace's view): the serving model,
which each route reads as its key may (bounded influence, ``scope.py``: the tools it may
move there), or None when there is none,
learning is off (``TOOLREACH_LEARNING``) or an admin switched the namespace off. A model
judged before that rule (migration 0012) is not loaded: its namespace routes as without
learning, and is due for training at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from app.db import unit_of_work
from app.learning import repository
from app.learning.guard import challenge
from app.learning.models import LearnedModel
from app.loop import repository as event_repository
from app.loop.memory import MemoryCache
from app.loop.repository import ForgetMark
from app.routing.reranker import Learned
from app.tools.examples import TextEncoder, text_vectors
from app.tools.live_index import IndexManager
from registry.errors import Conflict, NotFound

log = logging.getLogger("toolreach.learning")

HISTORY = 10  # models shown by GET /v1/learning


class LearningCache:
    """Each namespace's serving model, loaded and trained off the request path."""

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        encoder: TextEncoder,
        index: IndexManager,
        memory: MemoryCache,
        *,
        enabled: bool = True,
        min_new_steps: int = 20,
        needed: int = 1,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._factory = session_factory
        self._encoder = encoder
        self._index = index
        self._memory = memory
        self.enabled = enabled  # TOOLREACH_LEARNING
        self.min_new_steps = min_new_steps
        self.needed = needed  # trust_keys
        self._clock = clock
        self._models: Mapping[str, Learned] = MappingProxyType({})
        self._off: frozenset[str] = frozenset()
        self._unscoped: frozenset[str] = frozenset()  # serving a model judged before the rule
        self._training = threading.Lock()  # one training at a time in this process
        self.trainings = 0  # challengers trained by this process (tests read it)
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def get(self, namespace: str) -> Learned | None:
        """The model a route of ``namespace`` reads (None: none serves, or learning is off);
        each route reads it as its key may (``Learned.for_key``, in the learned vote)."""
        if not self.enabled or namespace in self._off:
            return None
        return self._models.get(namespace)

    def held(self, namespace: str) -> Learned | None:
        """The stored serving model this process holds, switched off or not."""
        return self._models.get(namespace)

    def load(self) -> None:
        """Swap in every namespace's stored serving model (reading only changed ones whole)
        and the admins' switches."""
        with unit_of_work(self._factory) as session:
            off = repository.switched_off(session)
            models: dict[str, Learned] = {}
            rows = repository.serving_versions(session)
            for row in rows:
                if not row.scoped:  # judged before bounded influence: serves nobody
                    continue
                had = self._models.get(row.namespace)
                if had is not None and had.version == row.version:
                    models[row.namespace] = had
                    continue
                stored = repository.model(session, row.namespace, row.version)
                if stored is None or stored.weights is None:
                    continue
                try:
                    models[row.namespace] = repository.as_learned(
                        stored, lambda texts: text_vectors(session, self._encoder, texts)
                    )
                except ValueError:
                    log.exception("model %d of %s is unreadable", row.version, row.namespace)
        self._models, self._off = MappingProxyType(models), off
        self._unscoped = frozenset(row.namespace for row in rows if not row.scoped)

    def due(self) -> list[str]:
        """The namespaces, learning on, with ``min_new_steps`` remembered steps newer than
        their last training, with reports forgotten since (``_forgot``), or serving a model
        judged before bounded influence and not judged again since (once memory holds its
        steps)."""
        if not self.enabled:
            return []
        with unit_of_work(self._factory) as session:
            trained = repository.last_trained(session)
            off = repository.switched_off(session)
            marks = event_repository.forget_marks(session)
            unjudged = {ns for ns in self._unscoped if repository.judged_last(session, ns)}
        due = []
        for namespace in sorted(self._index.namespaces()):
            since = trained.get(namespace)
            steps = self._memory.steps(namespace)
            new = sum(since is None or s.last_seen > since for s in steps)
            if namespace in off:
                continue
            if (
                new >= self.min_new_steps
                or self._forgot(namespace, since, marks)
                or (namespace in unjudged and steps)
            ):
                due.append(namespace)
        return due

    def _forgot(self, namespace: str, since: datetime | None, marks: list[ForgetMark]) -> bool:
        """Whether an admin forgot reports of ``namespace`` since its last training, and
        query memory is rebuilt without them: the serving model learnt from them."""
        built = self._memory.built_at
        return (
            since is not None
            and built is not None
            and any(m.namespace == namespace and since < m.created_at <= built for m in marks)
        )

    def train(self, namespace: str) -> dict[str, Any]:
        """Train and judge a challenger for ``namespace`` now, store the verdict (and the
        model), and load what serves; the stored row as JSON (``model_json``)."""
        try:
            with self._training:
                row = self._train(namespace)
                self.load()  # before another round reads what is due
        except IntegrityError as exc:  # another replica stored this version meanwhile
            raise Conflict(
                f"another replica stored a model of {namespace!r} meanwhile; try again",
                {"namespace": namespace},
            ) from exc
        self.load()
        return row

    def _train(self, namespace: str) -> dict[str, Any]:
        snapshot = self._index.get(namespace)
        if snapshot is None or not len(snapshot.cards):
            raise NotFound(f"unknown namespace {namespace!r}", {"namespace": namespace})
        steps = self._memory.steps(namespace)
        champion = self._models.get(namespace)
        with unit_of_work(self._factory) as session:
            vectors = text_vectors(session, self._encoder, [s.text for s in steps])
            version = repository.next_version(session, namespace)
        learned, verdict = challenge(
            snapshot.index,
            steps,
            vectors,
            self.needed,
            self._index.config,
            champion,
            version=version,
        )
        self.trainings += 1
        summary = verdict.summary()
        log.info("learning %s: model %d %s", namespace, version, summary["reason"])
        with unit_of_work(self._factory) as session:
            stored = repository.serving(session, namespace)
            if stored is not None and stored.confirmed is None:
                stored = None  # judged before bounded influence: never loaded
            if (None if stored is None else stored.version) != (
                None if champion is None else champion.version
            ):
                raise Conflict(
                    f"the serving model of {namespace!r} changed while a challenger was "
                    "trained; it was not stored",
                    {"namespace": namespace},
                )
            row = repository.add_model(
                session,
                namespace,
                version,
                learned,
                snapshot.index.embeddings.shape[1],
                summary,
                len(steps),
                verdict.promoted,
                self._clock(),
            )
            return model_json(row)

    def tick(self) -> None:
        """One round of the thread: load what serves, train what is due, load again."""
        self.load()
        for namespace in self.due():
            try:
                with self._training:
                    if namespace in self.due():  # not trained meanwhile by another round
                        self._train(namespace)
                        self.load()  # before another round reads what is due
            except (Conflict, IntegrityError) as exc:  # another replica stored one meanwhile
                log.info("learning %s: %s", namespace, exc)
            except Exception:
                log.exception("learning %s failed; the previous model keeps serving", namespace)
        self.load()

    def start(self, poll: float, interval: float) -> None:
        """Load now and every ``poll`` seconds (or when woken); train every ``interval``."""

        def loop() -> None:
            trained = time.monotonic() - interval  # the first round may train
            while not self._stop.is_set():
                try:
                    if time.monotonic() - trained >= interval:
                        trained = time.monotonic()
                        self.tick()
                    else:
                        self.load()
                except Exception:
                    log.exception("learning failed; the previous models keep serving")
                self._wake.wait(min(poll, interval))
                self._wake.clear()

        self._thread = threading.Thread(target=loop, name="learning", daemon=True)
        self._thread.start()

    def heard(self, payload: str = "") -> None:
        """A serving model announced (``repository.LEARNING_CHANNEL``), or a switch written
        here: load now, on the background thread."""
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def purge(factory: sessionmaker[Session], before: datetime) -> int:
    """``toolreach purge``: every namespace's stored models pruned (``repository.prune``),
    verdicts judged before ``before`` deleted too; the rows deleted."""
    with unit_of_work(factory) as session:
        return sum(repository.prune(session, ns, before) for ns in repository.namespaces(session))


def model_json(row: LearnedModel) -> dict[str, Any]:
    """A stored model as the admin API shows it (never its weights)."""
    verdict = row.verdict
    return {
        "version": row.version,
        "state": row.state,
        "digest": row.digest,
        "tools": len(row.tools),
        "steps": row.steps,
        "trained_on": verdict.get("trained_on"),
        "held_out": verdict.get("held_out"),
        "promoted": verdict.get("promoted"),
        "reason": verdict.get("reason"),
        "hit@1": {
            "without": (verdict.get("champion") or {}).get("hit@1"),
            "with": (verdict.get("challenger") or {}).get("hit@1"),
        },
        "shared": bool(verdict.get("shared", False)),
        "verdict": verdict,
        "calibrated": row.calibration is not None,
        "created_at": row.created_at.isoformat(),
        "served_at": None if row.served_at is None else row.served_at.isoformat(),
    }


def state(session: Session, cache: LearningCache, namespace: str) -> dict[str, Any]:
    """A namespace's learning: its switch, the serving model, the last verdict, and its
    newest models."""
    rows = repository.history(session, namespace, HISTORY)
    serving = repository.serving(session, namespace)
    held = cache.held(namespace)
    return {
        "namespace": namespace,
        "enabled": enabled(session, cache, namespace),
        "serving": None if serving is None else model_json(serving),
        "loaded_version": None if held is None else held.version,
        "last_verdict": model_json(rows[0]) if rows else None,
        "history": [model_json(r) for r in rows],
    }


def enabled(session: Session, cache: LearningCache, namespace: str) -> bool:
    """Whether ``namespace`` learns: the service's setting and the admins' switch."""
    return cache.enabled and repository.is_enabled(session, namespace)


def switch(session: Session, namespace: str, enabled: bool) -> None:
    """Switch ``namespace``'s learning on or off (announced like a new serving model)."""
    repository.set_switch(session, namespace, enabled, datetime.now(UTC))
    repository.announce(session, namespace)


def rollback(session: Session, namespace: str) -> dict[str, Any]:
    """Serve the previous model again; Conflict when there is none."""
    restored = repository.rollback(session, namespace, datetime.now(UTC))
    if restored is None:
        raise Conflict(
            f"namespace {namespace!r} has no previous model to roll back to",
            {"namespace": namespace},
        )
    return model_json(restored)


def overview(session: Session, cache: LearningCache, namespaces: list[str]) -> list[dict[str, Any]]:
    """The dashboard's rows: per namespace with a judged model, whether it learns, the
    serving model (trained on how many reports, held-out hit@1 with it and without, when
    promoted) and the last verdict (when, and why if refused)."""
    rows = []
    for namespace in namespaces:
        last = repository.newest(session, namespace)
        if last is None:
            continue
        serving = repository.serving(session, namespace)
        rows.append(
            {
                "namespace": namespace,
                "enabled": enabled(session, cache, namespace),
                "serving": None if serving is None else model_json(serving),
                "last": model_json(last),
            }
        )
    return rows
