"""What the advice endpoints answer (``/v1/advice``), so the OpenAPI document describes every
field; the service's ``Advice`` is read into them (``advice_read``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from app.advice.finding import Finding, Note
from app.advice.service import Advice

KindName = Literal["confusion", "miss", "parameter"]


class ChangeRead(BaseModel):
    """One card field's whole new value."""

    tool: str
    field: Literal["description", "examples", "parameters"]
    value: Any


class ReplayRead(BaseModel):
    """The reported steps routed before and after the edit."""

    checked: int = Field(description="reported steps routed again")
    fixed: int = Field(description="steps whose used tool comes first only after the edit")
    broken: int = Field(description="steps whose used tool came first only before")


class FindingRead(BaseModel):
    """One offered edit, with what it is made of and the replay that let it through."""

    id: str
    kind: KindName
    tools: list[str] = Field(description="[the tool routed first, the tool the agent used]")
    cases: int = Field(description="wrong steps it is made of")
    keys: int = Field(description="distinct keys that reported them")
    steps: list[str] = Field(description="up to 10 of the steps, as reported (never written)")
    diagnosis: str
    changes: list[ChangeRead]
    replay: ReplayRead


class NoteRead(BaseModel):
    """A group of wrong steps the doctor offers no edit for, and why."""

    kind: KindName
    tools: list[str]
    cases: int
    keys: int
    code: str = Field(
        description="too_few_steps, too_few_keys, no_words, broke, fixed_nothing, gaming, "
        "not_checked"
    )
    reason: str


class AdviceRead(BaseModel):
    """A namespace's advice: offered edits worst first, and why the other misroutes have none."""

    namespace: str
    status: Literal["ready", "computing"] = Field(
        description="computing: not done within the wait; what is shown is the last advice"
    )
    computed_at: datetime | None = None
    seconds: float | None = Field(None, description="how long the computation took")
    complete: bool = Field(True, description="false: the time budget ended it early")
    steps: int = Field(0, description="reported steps read (the newest 500 at most)")
    misroutes: int = Field(0, description="of them, steps whose used tool was not first")
    advice: list[FindingRead]
    notes: list[NoteRead]


class AppliedRead(BaseModel):
    tool: str
    version: int


class AdviceApplyRead(BaseModel):
    namespace: str
    advice: str
    written: list[AppliedRead]


def finding_read(finding: Finding) -> FindingRead:
    changes = [ChangeRead(tool=c.tool, field=c.field, value=c.value) for c in finding.changes]
    return FindingRead(
        id=finding.id,
        kind=finding.kind,
        tools=list(finding.tools),
        cases=finding.cases,
        keys=finding.keys,
        steps=finding.steps,
        diagnosis=finding.diagnosis,
        changes=changes,
        replay=ReplayRead.model_validate(finding.replay),
    )


def note_read(note: Note) -> NoteRead:
    return NoteRead(
        kind=note.kind,
        tools=list(note.tools),
        cases=note.cases,
        keys=note.keys,
        code=note.code,
        reason=note.reason,
    )


def advice_read(namespace: str, advice: Advice | None, computing: bool = False) -> AdviceRead:
    """The answer for ``advice`` (None: none computed yet, computing)."""
    status: Literal["ready", "computing"] = "computing" if computing else "ready"
    if advice is None:
        return AdviceRead(namespace=namespace, status=status, advice=[], notes=[])
    return AdviceRead(
        namespace=namespace,
        status=status,
        computed_at=advice.computed_at,
        seconds=advice.seconds,
        complete=advice.complete,
        steps=advice.steps,
        misroutes=advice.misroutes,
        advice=[finding_read(f) for f in advice.findings],
        notes=[note_read(n) for n in advice.notes],
    )
