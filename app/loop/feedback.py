"""Feedback on a route: what the agent really called, and how it went. One record per route.

The rules, and why:

* an unknown route id is 404: the agent has the id from our answer, so an unknown one is a
  bug or a route older than the retention, and silently accepting it would hide the bug; to
  a key limited to namespaces, a route of another namespace is unknown, word for word;
* a ``chosen`` name that is not a tool of the route's namespace is 422 with the closest real
  names, like ``/v1/validate``: hit rates over invented names would be meaningless;
* a repeat of the same report is idempotent (200, the same record), so agents may retry
  freely; a report that contradicts the recorded one (another tool, another known outcome)
  is 409 with the recorded one in the details: the first report stands, nothing is lost
  silently. An ``unknown`` outcome never contradicts: a later report for the same tool
  fills it in (this is how a call recorded by ``/v1/validate`` gets its outcome);
* a recent route this replica does not know may be another replica's, not yet written: it
  is asked for and waited for (``OtherReplicas``), holding no database connection, and
  only a few at once per key (``Waits``), so made-up ids cost their sender, not the others.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy.orm import Session, sessionmaker

from app.db import DATABASE_TROUBLE, unit_of_work
from app.errors import Overloaded, TooManyRequests
from app.loop import repository as event_repository
from app.loop.events import EventWriter, route_id_time
from app.loop.models import Feedback
from app.loop.repository import RouteFacts
from app.schemas import FeedbackRead, FeedbackRequest, Outcome, Verdict
from app.tools.live_index import IndexManager
from registry.calls import did_you_mean
from registry.errors import Conflict, InvalidInput, NotFound

log = logging.getLogger("toolreach")


def find_route(session: Session, writer: EventWriter, route_id: str) -> RouteFacts | None:
    """A route still in the writer's buffer, else in the database (checked in that order)."""
    record = writer.pending(route_id)
    if record is not None:
        return RouteFacts(record.route_id, record.namespace, record.candidate_names)
    return event_repository.find_route(session, route_id)


def unknown_route(route_id: str) -> NotFound:
    return NotFound(
        f"no route {route_id!r}: unknown, older than the retention, or answered by "
        "another replica a moment ago and not yet written (retry in a few seconds)"
    )


def find_visible_route(
    session: Session, writer: EventWriter, route_id: str, visible: Collection[str] | None
) -> RouteFacts | None:
    """``find_route``, but None for a route of a namespace out of ``visible`` (None: all)."""
    route = find_route(session, writer, route_id)
    if route is None or (visible is not None and route.namespace not in visible):
        return None
    return route


# A route id made longer ago than this (or later: clocks drift) is not waited for.
RECENT_SECONDS = 60.0


class Waits:
    """How many waits for another replica's route may run at once: ``per_key`` for one key,
    ``total`` on this process. A wait holds a worker thread (never a database connection),
    and a made-up id that looks recent always waits the whole time: without these bounds one
    key's loop of made-up ids would hold every worker thread."""

    def __init__(self, per_key: int, total: int) -> None:
        self.per_key, self.total = per_key, total
        self._held: Counter[str | None] = Counter()
        self._lock = threading.Lock()

    @contextmanager
    def one(self, key_id: str | None) -> Iterator[None]:
        """Hold one wait for ``key_id`` for the block; refused at once when none is free
        (429 for the key's own bound, 503 for the process's: nothing was done, retry)."""
        with self._lock:
            if self._held[key_id] >= self.per_key:
                raise TooManyRequests(
                    f"this key already waits for {self.per_key} routes another replica "
                    "answered; retry in a moment",
                    retry_after=1,
                    details={"waits_per_key": self.per_key},
                )
            if self._held.total() >= self.total:
                raise Overloaded(
                    f"this replica already waits for {self.total} routes other replicas "
                    "answered; retry in a moment",
                    {"waits": self.total},
                )
            self._held[key_id] += 1
        try:
            yield
        finally:
            with self._lock:
                self._held[key_id] -= 1
                if not self._held[key_id]:
                    del self._held[key_id]


@dataclass(frozen=True)
class OtherReplicas:
    """Finds a route another replica answered a moment ago, whose event that replica has not
    written yet (it writes every ``event_flush_seconds``): asks it to write now (a
    notification its listener hears: ``EventWriter.write_soon``), then looks for the row
    after ``poll_seconds``, then twice as long each time up to ``max_poll_seconds``, for up to
    ``wait_seconds`` in all. Only for a recent route id (``route_id_time``): an old one is a
    404 at once. Each look is its own short transaction: no connection is held while it
    waits, and ``waits`` bounds how many wait at once (per key and in all)."""

    sessions: sessionmaker[Session]
    wait_seconds: float
    waits: Waits = field(default_factory=lambda: Waits(per_key=2, total=8))
    poll_seconds: float = 0.005
    max_poll_seconds: float = 0.1

    def find(self, route_id: str, key_id: str | None = None) -> RouteFacts | None:
        made = route_id_time(route_id)
        if self.wait_seconds <= 0 or made is None or abs(time.time() - made) > RECENT_SECONDS:
            return None
        with self.waits.one(key_id):
            with unit_of_work(self.sessions) as own:  # committed now: the notification goes
                if not event_repository.ask_for_route(own, route_id):
                    return None
            return self._look(route_id)

    def _look(self, route_id: str) -> RouteFacts | None:
        deadline, pause = time.monotonic() + self.wait_seconds, self.poll_seconds
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(pause, left))
            pause = min(pause * 2, self.max_poll_seconds)
            with unit_of_work(self.sessions) as own:
                found = event_repository.find_route(own, route_id)
            if found is not None:
                return found
        return None


def verdict(chosen: str | None, rank: int | None) -> Verdict:
    if chosen is None:
        return "none_fit"
    if rank is None:
        return "miss"
    return "hit_at_1" if rank == 1 else "hit_at_k"


def rank_of(chosen: str | None, candidates: tuple[str, ...]) -> int | None:
    return candidates.index(chosen) + 1 if chosen in candidates else None


def to_read(row: Feedback) -> FeedbackRead:
    return FeedbackRead(
        route_id=row.route_id,
        namespace=row.namespace,
        chosen=row.chosen,
        outcome=row.outcome,
        error_code=row.error_code,
        rank=row.rank,
        verdict=verdict(row.chosen, row.rank),
        from_validate=row.from_validate,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def unknown_tool(index: IndexManager, namespace: str, name: str) -> tuple[str, list[str]]:
    """What to say of a name that is no tool of ``namespace``, and the closest real names
    (the same words in ``/v1/feedback`` and ``/v1/validate``)."""
    suggestions = did_you_mean(name, index.names(namespace))
    hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
    return f"no tool {name!r} in namespace {namespace!r}{hint}", suggestions


def check_tool(index: IndexManager, namespace: str, name: str) -> str:
    """The card name of tool ``name`` (its own, or the one it was exported under);
    InvalidInput with the closest names if there is no such tool."""
    card = index.card(namespace, name)
    if card is not None:
        return card.name
    message, suggestions = unknown_tool(index, namespace, name)
    problem = {"loc": ["body", "chosen"], "message": message, "did_you_mean": suggestions}
    raise InvalidInput(message, [problem])


def new_row(
    route: RouteFacts, request: FeedbackRequest, *, from_validate: bool, key_id: str | None = None
) -> Feedback:
    now = datetime.now(UTC)
    return Feedback(
        route_id=route.route_id,
        namespace=route.namespace,
        chosen=request.chosen,
        rank=rank_of(request.chosen, route.candidates),
        outcome=request.outcome,
        error_code=request.error_code,
        from_validate=from_validate,
        created_at=now,
        updated_at=now,
        key_id=key_id,
    )


def reconcile(row: Feedback, request: FeedbackRequest) -> bool:
    """Apply a repeated report to the recorded one: True if it changed, Conflict if it can't."""
    if row.chosen != request.chosen:
        raise _conflict(row, "another tool")
    if request.outcome == "unknown":
        return False
    if row.outcome == "unknown":
        row.outcome, row.error_code = request.outcome, request.error_code
        row.updated_at = datetime.now(UTC)
        return True
    if (row.outcome, row.error_code) != (request.outcome, request.error_code):
        raise _conflict(row, "another outcome")
    return False


def _conflict(row: Feedback, what: str) -> Conflict:
    return Conflict(
        f"feedback for route {row.route_id!r} is already recorded with {what}; "
        "the first report stands",
        {"recorded": to_read(row).model_dump(mode="json")},
    )


def record_feedback(
    session: Session,
    writer: EventWriter,
    index: IndexManager,
    request: FeedbackRequest,
    visible: Collection[str] | None = None,
    replicas: OtherReplicas | None = None,
    key_id: str | None = None,
) -> tuple[FeedbackRead, bool]:
    """Record (or confirm) the feedback; returns it and whether anything changed. A route of
    a namespace out of ``visible`` (None: every one) is unknown. ``replicas``: ask the other
    replicas for a recent route this one does not know. ``key_id``: the reporting key (query
    memory caps any one key's weight)."""
    route = find_route(session, writer, request.route_id)
    if route is None and replicas is not None:
        # Nothing is written yet: end the read, so that the request's connection goes back
        # to the pool while it waits (each look for the route takes one for a moment).
        session.rollback()
        route = replicas.find(request.route_id, key_id)
    if route is None or (visible is not None and route.namespace not in visible):
        raise unknown_route(request.route_id)
    # A tool the route offered is real even if this replica's index has not yet caught up
    # with the replica that answered it; any other name is checked (and recorded by its card
    # name, however it was called).
    if request.chosen is not None and request.chosen not in route.candidates:
        chosen = check_tool(index, route.namespace, request.chosen)
        request = request.model_copy(update={"chosen": chosen})
    row = event_repository.get_feedback(session, route.route_id)
    if row is not None:
        changed = reconcile(row, request)
        return to_read(row), changed
    row = new_row(route, request, from_validate=False, key_id=key_id)
    if event_repository.add_feedback(session, row):
        return to_read(row), True
    # The same report, sent twice at once: the other copy landed first.
    landed = event_repository.get_feedback(session, route.route_id)
    if landed is None:
        raise Conflict("another report for this route arrived at the same moment; retry")
    return to_read(landed), reconcile(landed, request)


def record_validated_call(
    factory: sessionmaker[Session],
    writer: EventWriter,
    index: IndexManager,
    route_id: str,
    name: str,
    visible: Collection[str] | None = None,
) -> bool:
    """``/v1/validate`` with a route id: the first real tool validated is the route's choice.

    Its own short transaction, run off the request path (``ValidatedCalls``). An unknown
    route (or one out of ``visible``, None: any), a name that is not a tool of the route's
    namespace, or a route already reported is ignored (False); the database's own trouble is
    raised, so the call can be retried.
    """
    with unit_of_work(factory) as session:
        route = find_visible_route(session, writer, route_id, visible)
        card = None if route is None else index.card(route.namespace, name)
        if route is None or card is None:
            return False
        if event_repository.get_feedback(session, route_id) is not None:
            return False
        request = FeedbackRequest(route_id=route_id, chosen=card.name)
        # False: a report for this route landed at the same moment; it stands.
        return event_repository.add_feedback(session, new_row(route, request, from_validate=True))


def record_call(
    factory: sessionmaker[Session],
    writer: EventWriter,
    index: IndexManager,
    namespace: str,
    route_id: str,
    name: str,
    outcome: Outcome,
    error_code: str | None,
) -> FeedbackRead | None:
    """A call forwarded by the gateway (app/gateway) in ``namespace`` (the caller's, scope
    applied) is the route's report: the tool, the outcome, the error code; the recorded
    report if this one changed it, else None. Only a route of the call's own namespace is
    its route: another namespace's route id is unknown to it, so no call writes a report
    into a namespace it was not made in.

    Its own short transaction, so bookkeeping never fails a call. As with ``/v1/feedback``
    the first report of a route stands, with one exception: a call of the same tool that
    succeeds after it failed records the success (the agent fixed its call; the step got
    done). An unknown route, or a name that is not a tool of the route's namespace, is
    not recorded.
    """
    try:
        with unit_of_work(factory) as session:
            route = find_visible_route(session, writer, route_id, (namespace,))
            card = None if route is None else index.card(route.namespace, name)
            if route is None or card is None:
                return None
            request = FeedbackRequest(
                route_id=route_id, chosen=card.name, outcome=outcome, error_code=error_code
            )
            row = event_repository.get_feedback(session, route_id)
            if row is None:
                row = new_row(route, request, from_validate=False)
                return to_read(row) if event_repository.add_feedback(session, row) else None
            if row.chosen != card.name:
                return None
            if row.outcome == "error" and outcome == "success":
                row.outcome, row.error_code = outcome, None
                row.updated_at = datetime.now(UTC)
                return to_read(row)
            try:
                return to_read(row) if reconcile(row, request) else None
            except Conflict:
                return None
    except DATABASE_TROUBLE as exc:
        log.warning("route %s: call not recorded: %s", route_id, exc.__class__.__name__)
        return None
