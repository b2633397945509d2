"""Is this a real tool, and are these arguments valid for it?"""

from __future__ import annotations

from fastapi import APIRouter

from app.api.error_handlers import ERROR_SHAPE
from app.deps import AgentDep, ServicesDep
from app.loop.feedback import record_validated_call
from app.schemas import CallProblem, ValidateRequest, ValidateResult
from registry.calls import did_you_mean, validate_arguments

router = APIRouter(prefix="/v1", tags=["validate"])


@router.post(
    "/validate",
    response_model=ValidateResult,
    responses={c: ERROR_SHAPE for c in (400, 401, 413, 422)},
)
def validate_call(
    request: ValidateRequest, services: ServicesDep, _agent: AgentDep
) -> ValidateResult:
    """Check a tool call before it runs: unknown names get the closest real ones.

    With a `route_id`, a real tool is also recorded as that route's choice (outcome
    unknown until `/v1/feedback` reports it), so an agent that validates need not report.
    """
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
