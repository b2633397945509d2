"""Is this a real tool, and are these arguments valid for it?"""

from __future__ import annotations

from fastapi import APIRouter

from app.api.error_handlers import ERROR_SHAPE
from app.deps import AgentDep, IndexDep, ValidatedDep
from app.loop import validation
from app.schemas import ValidateRequest, ValidateResult
from app.tools.namespaces import in_namespace

router = APIRouter(prefix="/v1", tags=["validate"])


@router.post(
    "/validate",
    response_model=ValidateResult,
    responses={c: ERROR_SHAPE for c in (400, 401, 403, 404, 413, 422)},
)
def validate_call(
    request: ValidateRequest, index: IndexDep, validated: ValidatedDep, caller: AgentDep
) -> ValidateResult:
    """Check a tool call before it runs: unknown names get the closest real ones.

    With a `route_id`, a real tool is also recorded as that route's choice (outcome
    unknown until `/v1/feedback` reports it), so an agent that validates need not report.
    It is recorded in the background, within a second or so; the answer never waits for it.
    A namespace that never held a tool the key may see is a 404 naming it, with
    did-you-mean (a key limited to namespaces gets it for any other; with no `namespace`, a
    key limited to one validates in that one), and its route ids are those of its namespaces.
    """
    request = in_namespace(caller, request, index)
    return validation.validate_call(validated, index, request, visible=caller.namespaces)
