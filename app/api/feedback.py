"""POST /v1/feedback: which tool the agent really called after a route, and how it went."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.error_handlers import ERROR_SHAPE
from app.deps import AgentDep, EventsDep, IndexDep, MetricsDep, ReplicasDep, SessionDep
from app.loop.feedback import record_feedback
from app.schemas import FeedbackRead, FeedbackRequest

router = APIRouter(prefix="/v1", tags=["feedback"])


@router.post(
    "/feedback",
    response_model=FeedbackRead,
    responses={c: ERROR_SHAPE for c in (400, 401, 403, 404, 409, 413, 422, 429, 503)},
)
def report_feedback(
    request: FeedbackRequest,
    session: SessionDep,
    events: EventsDep,
    index: IndexDep,
    replicas: ReplicasDep,
    metrics: MetricsDep,
    caller: AgentDep,
) -> FeedbackRead:
    """Report the tool called (null: none fit) and the outcome; repeating a report is safe.

    To a key limited to namespaces, a route of another namespace is an unknown route (404).
    A recent route another replica answered is waited for, a few at once per key (429).
    """
    feedback, changed = record_feedback(
        session,
        events,
        index,
        request,
        visible=caller.namespaces,
        replicas=replicas,
        key_id=caller.key_id,
    )
    if changed:
        metrics.count_feedback(feedback.namespace, feedback.outcome, feedback.verdict)
    return feedback
