"""What the learning endpoints answer (``/v1/learning``), so the OpenAPI document describes
every field; the service's dicts (``service.model_json``, ``service.state``) are read into
them. A verdict stored by an older version may lack newer fields: they have defaults."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ModelState = Literal["serving", "refused", "retired", "rolled_back"]


class HeldOutRead(BaseModel):
    """How one model routed the held-out steps."""

    model_config = ConfigDict(populate_by_name=True)

    hit_at_1: float = Field(alias="hit@1", description="share of held-out steps put first")
    unseen_steps: int = Field(description="held-out steps whose tool this model does not move")
    unseen_hit_at_1: float | None = Field(alias="unseen_hit@1", default=None)


class OtherKeysRead(BaseModel):
    """The held-out steps routed as a key that reported none (bounded influence)."""

    champion: HeldOutRead | None = None
    challenger: HeldOutRead | None = None
    wins: float = Field(
        0.0, description="steps won, each key counted at most as often as the trust_keys-th busiest"
    )
    losses: float = 0.0


class VerdictRead(BaseModel):
    """The guard's decision on one challenger, and every figure behind it."""

    promoted: bool | None = None
    reason: str | None = None
    trained_on: int | None = Field(None, description="remembered steps it was trained on")
    held_out: int | None = Field(None, description="remembered steps it was judged on")
    cold: HeldOutRead | None = Field(
        None, description="the cold ranking (no model), each step routed as its reporter"
    )
    champion: HeldOutRead | None = Field(
        None,
        description="the model it was judged against (the serving one, else the cold "
        "ranking), each step routed as its reporter",
    )
    challenger: HeldOutRead | None = None
    gain: float | None = Field(None, description="held-out hit@1 gained over the cold ranking")
    gain_lower: float | None = Field(
        None, description="the lower end of the gain's one-sided 95% interval (promotion: > 0)"
    )
    delta: float | None = Field(
        None,
        description="the gate chosen out of fold: how much the model's first must beat "
        "the cold first by",
    )
    ece_before: float | None = None
    ece_after: float | None = None
    seconds: float | None = None
    keys: int = Field(0, description="distinct keys whose reports it was trained on")
    shared: bool = Field(False, description="other keys agree: it moves confirmed tools for all")
    confirmed_tools: int = Field(0, description="tools it moves in every key's routes")
    own_tools: int = Field(0, description="tools it moves only for the one key that reported them")
    other_keys: OtherKeysRead | None = None


class HitsRead(BaseModel):
    """Held-out hit@1 without the model (the one it was judged against) and with it."""

    model_config = ConfigDict(populate_by_name=True)

    without: float | None = None
    with_: float | None = Field(None, alias="with")


class LearnedModelRead(BaseModel):
    """One judged model of a namespace (never its weights)."""

    model_config = ConfigDict(populate_by_name=True)

    version: int
    state: ModelState
    digest: str | None = Field(description="the weights' digest; null: none were trained")
    tools: int = Field(description="tools it was trained with reports of")
    steps: int = Field(description="remembered steps when it was trained")
    trained_on: int | None = None
    held_out: int | None = None
    promoted: bool | None = None
    reason: str | None = None
    hit_at_1: HitsRead = Field(alias="hit@1")
    shared: bool = Field(description="it moves confirmed tools in every key's routes")
    verdict: VerdictRead
    calibrated: bool
    created_at: datetime
    served_at: datetime | None = None


class LearningRead(BaseModel):
    """A namespace's learning: its switch, the serving model, the last verdict, the newest."""

    namespace: str
    enabled: bool
    serving: LearnedModelRead | None
    loaded_version: int | None = Field(description="the version this replica routes with")
    last_verdict: LearnedModelRead | None
    history: list[LearnedModelRead]


class LearningSwitchRead(BaseModel):
    namespace: str
    enabled: bool


class LearningRollbackRead(BaseModel):
    namespace: str
    serving: LearnedModelRead


class LearningTrainRead(BaseModel):
    namespace: str
    model: LearnedModelRead
