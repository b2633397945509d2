"""``/v1/validate``: is this a real tool, are these arguments valid for it, and, with a route
id, the first real tool validated recorded as that route's choice.

The check itself reads only the live index (no database), so a validation answers even
while the database is down or not answering. The bookkeeping is queued (`ValidatedCalls`)
and written by the event writer's thread, so it never delays or fails the answer.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session, sessionmaker

from app.db import DATABASE_TROUBLE
from app.loop.events import EventWriter
from app.loop.feedback import record_validated_call, unknown_tool
from app.schemas import CallProblem, ValidateRequest, ValidateResult
from app.tools.live_index import IndexManager
from registry.calls import validate_arguments

log = logging.getLogger("toolreach.events")


@dataclass(frozen=True)
class Guess:
    """The tools an unknown name may mean by what it does, best first, and why."""

    names: list[str]
    reason: str | None  # None when nothing fits


# (namespace, the unknown name, the call's argument names) -> the tools that fit them when
# routed as a step (app/route/guess.py; built once in app/services.py).
Guesser = Callable[[str, str, Sequence[str]], Guess]


def unknown_call(
    index: IndexManager,
    namespace: str,
    name: str,
    arguments: Sequence[str],
    guess: Guesser | None = None,
) -> tuple[str, Guess]:
    """What to say of a call to a name that is no tool: the real names spelt closest to it;
    when none is, the tools ``guess`` fits to its words and arguments (issue 42 item 2)."""
    message, suggestions = unknown_tool(index, namespace, name)
    if suggestions or guess is None:
        return message, Guess(suggestions, None)
    found = guess(namespace, name, arguments)
    if found.names:
        message += f"; did you mean {', '.join(found.names)}?"
    return message, found


class ValidatedCalls:
    """Validated calls that name a route, waiting to be recorded as the route's choice.

    At most ``buffer_size`` wait (the oldest are dropped first, counted in `dropped`). The
    event writer's thread records them after its route events (`EventWriter.also_write`),
    oldest first; while the database cannot take them they stay queued and are retried with
    the events. A report (`/v1/feedback`) that lands before a queued call stands; the call
    is then ignored, as any call for a route already reported.
    """

    def __init__(
        self,
        factory: sessionmaker[Session],
        writer: EventWriter,
        index: IndexManager,
        *,
        buffer_size: int = 10_000,
    ) -> None:
        self._factory, self._writer, self._index = factory, writer, index
        self.buffer_size = buffer_size
        # (route id, tool name, the namespaces the caller may see; None: any)
        self._queue: deque[tuple[str, str, Collection[str] | None]] = deque()
        self._lock = threading.Lock()
        self.dropped = 0
        writer.also_write(self.write)

    @property
    def waiting(self) -> int:
        return len(self._queue)

    def submit(self, route_id: str, name: str, visible: Collection[str] | None = None) -> None:
        """Queue one call; never blocks on the database."""
        with self._lock:
            self._queue.append((route_id, name, visible))
            self._trim()

    def _trim(self) -> None:
        while len(self._queue) > self.buffer_size:
            self._queue.popleft()
            self.dropped += 1
            if self.dropped % 1000 == 1:  # log, but not every drop
                log.warning("validated-call queue full: %d oldest dropped so far", self.dropped)

    def write(self) -> int:
        """Record every queued call, oldest first; returns how many became a choice. On the
        database's trouble the call goes back to the front and this raises; a call that
        fails otherwise (a bug, data the database refuses) is logged and dropped."""
        recorded = 0
        while True:
            with self._lock:
                if not self._queue:
                    return recorded
                route_id, name, visible = self._queue.popleft()
            try:
                recorded += record_validated_call(
                    self._factory, self._writer, self._index, route_id, name, visible
                )
            except DATABASE_TROUBLE:
                with self._lock:
                    self._queue.appendleft((route_id, name, visible))
                    self._trim()
                raise
            except Exception:
                with self._lock:
                    self.dropped += 1
                log.exception("route %s: validated call %r not recorded", route_id, name)


def check_call(
    index: IndexManager, request: ValidateRequest, guess: Guesser | None = None
) -> ValidateResult:
    """An unknown name is invalid with the closest real names (else the tools ``guess``
    fits to it, the reason as the problem's suggestion); a known one is checked against its
    card's parameters, each problem with its path and a suggestion."""
    card = index.card(request.namespace, request.name)
    if card is None:
        args = list(request.arguments)
        message, found = unknown_call(index, request.namespace, request.name, args, guess)
        problem = CallProblem(path="", message=message, suggestion=found.reason)
        return ValidateResult(valid=False, errors=[problem], did_you_mean=found.names)
    problems = [
        CallProblem(path=p.path, message=p.message, suggestion=p.suggestion)
        for p in validate_arguments(card, request.arguments)
    ]
    return ValidateResult(valid=not problems, errors=problems, did_you_mean=[])


def validate_call(
    validated: ValidatedCalls,
    index: IndexManager,
    request: ValidateRequest,
    visible: Collection[str] | None = None,
    guess: Guesser | None = None,
) -> ValidateResult:
    """Check the call; if it names a route, queue it to be recorded as the route's choice
    (only if the route is of a namespace in ``visible``; None: any)."""
    if request.route_id is not None:
        validated.submit(request.route_id, request.name, visible)
    return check_call(index, request, guess)
