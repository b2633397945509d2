"""Learning from reports through the admin API: a namespace's learned model, its switch, a
rollback, and training now (app/learning/service.py)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Depends, Path, Query

from app.api.error_handlers import ERROR_SHAPE
from app.deps import AdminDep, IndexDep, LearningDep, SessionDep, ViewerDep
from app.keys.scope import Caller, require_writable
from app.learning import service as learning
from app.learning.schemas import (
    LearnedModelRead,
    LearningRead,
    LearningRollbackRead,
    LearningSwitchRead,
    LearningTrainRead,
)
from app.learning.service import LearningCache
from app.schemas import NAMESPACE_PATTERN
from app.tools.live_index import IndexManager
from app.tools.namespaces import require_known
from registry.errors import Conflict, NotFound

router = APIRouter(prefix="/v1/learning", tags=["learning"])
ERRORS: dict[int | str, dict[str, Any]] = {c: ERROR_SHAPE for c in (401, 403, 404, 409, 422)}
NamespaceArg = Annotated[str, Query(pattern=NAMESPACE_PATTERN, description="the namespace")]
NamespacePath = Annotated[str, Path(pattern=NAMESPACE_PATTERN)]


def known(index: IndexManager, caller: Caller, namespace: str, write: bool = True) -> None:
    """A namespace the caller may see (``write``: write to) and that holds tools: out of
    scope, Forbidden for a write and, for a read, the NotFound of a namespace that never
    held a tool (app/keys/scope.py); NotFound for one without tools."""
    if write:
        require_writable(namespace, caller.namespaces)
    require_known(index, namespace, caller.namespaces)
    snapshot = index.get(namespace)
    if snapshot is None or not len(snapshot.cards):
        raise NotFound(f"unknown namespace {namespace!r}", {"namespace": namespace})


def readable(namespace: NamespaceArg, index: IndexDep, viewer: ViewerDep) -> str:
    """The query's namespace, one the viewer may see that holds tools (``known``)."""
    known(index, viewer, namespace, write=False)
    return namespace


def writable(namespace: NamespacePath, index: IndexDep, admin: AdminDep) -> str:
    """The path's namespace, one the admin key may write to that holds tools (``known``)."""
    known(index, admin, namespace)
    return namespace


Readable = Annotated[str, Depends(readable)]
Writable = Annotated[str, Depends(writable)]


@router.get("", response_model=LearningRead, responses=ERRORS)
def learning_state(namespace: Readable, session: SessionDep, cache: LearningDep) -> LearningRead:
    """The namespace's learned model: on or off, the one serving (trained on how many
    reports, held-out hit@1 with it and without), the last verdict (refused ones say why),
    and the newest models."""
    return LearningRead.model_validate(learning.state(session, cache, namespace))


@router.post("/{namespace}/off", response_model=LearningSwitchRead, responses=ERRORS)
def learning_off(
    namespace: Writable, session: SessionDep, cache: LearningDep, background: BackgroundTasks
) -> LearningSwitchRead:
    """Switch the namespace's learning off: its routes read no learned model, and nothing is
    trained, until it is switched on again (on every replica)."""
    return switched(cache, session, background, namespace, enabled=False)


@router.post("/{namespace}/on", response_model=LearningSwitchRead, responses=ERRORS)
def learning_on(
    namespace: Writable, session: SessionDep, cache: LearningDep, background: BackgroundTasks
) -> LearningSwitchRead:
    """Switch the namespace's learning on again: its serving model (if any) serves."""
    return switched(cache, session, background, namespace, enabled=True)


def switched(
    cache: LearningCache,
    session: SessionDep,
    background: BackgroundTasks,
    namespace: str,
    enabled: bool,
) -> LearningSwitchRead:
    """Write the namespace's switch; every replica reloads (this one at once)."""
    learning.switch(session, namespace, enabled=enabled)
    background.add_task(cache.heard)
    return LearningSwitchRead(namespace=namespace, enabled=enabled)


@router.post("/{namespace}/rollback", response_model=LearningRollbackRead, responses=ERRORS)
def learning_rollback(
    namespace: Writable, session: SessionDep, cache: LearningDep, background: BackgroundTasks
) -> LearningRollbackRead:
    """Serve the previous model again (409 if there is none); the one serving is rolled
    back and no later rollback serves it."""
    restored = LearnedModelRead.model_validate(learning.rollback(session, namespace))
    background.add_task(cache.heard)
    return LearningRollbackRead(namespace=namespace, serving=restored)


@router.post("/{namespace}/train", response_model=LearningTrainRead, responses=ERRORS)
def learning_train(
    namespace: Writable, session: SessionDep, cache: LearningDep
) -> LearningTrainRead:
    """Train and judge a challenger now, on the namespace's remembered steps: the stored
    model and its verdict (409 while learning is off)."""
    if not learning.enabled(session, cache, namespace):
        raise Conflict(f"learning is off in namespace {namespace!r}", {"namespace": namespace})
    model = LearnedModelRead.model_validate(cache.train(namespace))
    return LearningTrainRead(namespace=namespace, model=model)
