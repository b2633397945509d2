"""``/v1/validate``: is this a real tool, are these arguments valid for it, and, with a route
id, the first real tool validated recorded as that route's choice.

The check itself reads only the live index (no database), so a validation answers even
while the database is down; only the bookkeeping needs it, and never fails the answer.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy.orm import Session, sessionmaker

from app.loop.events import EventWriter
from app.loop.feedback import record_validated_call, unknown_tool
from app.schemas import CallProblem, ValidateRequest, ValidateResult
from app.tools.live_index import IndexManager
from registry.calls import validate_arguments


def check_call(index: IndexManager, request: ValidateRequest) -> ValidateResult:
    """An unknown name is invalid with the closest real names; a known one is checked
    against its card's parameters, each problem with its path and a suggestion."""
    card = index.card(request.namespace, request.name)
    if card is None:
        message, suggestions = unknown_tool(index, request.namespace, request.name)
        problem = CallProblem(path="", message=message)
        return ValidateResult(valid=False, errors=[problem], did_you_mean=suggestions)
    problems = [
        CallProblem(path=p.path, message=p.message, suggestion=p.suggestion)
        for p in validate_arguments(card, request.arguments)
    ]
    return ValidateResult(valid=not problems, errors=problems, did_you_mean=[])


def validate_call(
    factory: sessionmaker[Session],
    writer: EventWriter,
    index: IndexManager,
    request: ValidateRequest,
    visible: Collection[str] | None = None,
) -> ValidateResult:
    """Record the call as its route's choice (if it names a route of a namespace in
    ``visible``, None: any), then check it."""
    if request.route_id is not None:
        record_validated_call(factory, writer, index, request.route_id, request.name, visible)
    return check_call(index, request)
