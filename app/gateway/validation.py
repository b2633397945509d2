"""Is this a real tool, and are these arguments valid for it? (``/v1/validate``, MCP's
``validate_call``, and the check a forwarded call will pass first.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.loop.feedback import record_validated_call
from app.schemas import CallProblem, ValidateRequest, ValidateResult
from registry.calls import did_you_mean, validate_arguments

if TYPE_CHECKING:
    from app.services import Services


def validate_call(services: Services, request: ValidateRequest) -> ValidateResult:
    """Check a call against the live index: an unknown name gets the closest real ones, bad
    arguments the exact schema error. With a ``route_id``, a real tool is recorded as that
    route's choice (its own short transaction: blocking, so call it off the event loop)."""
    if request.route_id is not None:
        record_validated_call(
            services.session_factory,
            services.events,
            services.index,
            request.route_id,
            request.name,
        )
    card = services.index.card(request.namespace, request.name)
    if card is None:
        names = services.index.names(request.namespace)
        suggestions = did_you_mean(request.name, names)
        hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
        message = f"no tool {request.name!r} in namespace {request.namespace!r}{hint}"
        return ValidateResult(
            valid=False, errors=[CallProblem(path="", message=message)], did_you_mean=suggestions
        )
    problems = [
        CallProblem(path=p.path, message=p.message, suggestion=p.suggestion)
        for p in validate_arguments(card, request.arguments)
    ]
    return ValidateResult(valid=not problems, errors=problems, did_you_mean=[])
