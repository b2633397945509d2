"""Tables of learning from reports: each namespace's trained models, and its switch.

``learned_models`` keeps the challengers the guard judged (app/learning/guard.py), refused
ones too (their verdict says why). Only two hold weights: the one serving and the previous
one (the retired model a rollback would serve); every other row is a verdict, and a
namespace keeps the newest ``repository.KEPT_VERDICTS`` of those (``repository.prune``). At
most one row of a namespace is ``serving``; a promotion retires the one before it, and a
rollback serves the previous one again. ``version`` counts a namespace's judgements, so a
replica knows whether the model it holds is the one stored. A model an admin rolled back
from is ``rolled_back``: no later rollback serves it again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    Index,
    Integer,
    LargeBinary,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from registry.models import Base, UTCDateTime, utcnow

SERVING, REFUSED, RETIRED = "serving", "refused", "retired"


class LearnedModel(Base):
    """One trained reranker of a namespace, its calibration, and the guard's verdict on it."""

    __tablename__ = "learned_models"
    __table_args__ = (
        UniqueConstraint("namespace", "version"),
        Index("ix_learned_models_namespace_state", "namespace", "state"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    namespace: Mapped[str] = mapped_column(String(64))
    version: Mapped[int] = mapped_column(Integer)  # 1, 2, … per namespace
    dim: Mapped[int] = mapped_column(Integer)
    # None: none trained, or no longer kept. Read only when a model is loaded (deferred).
    weights: Mapped[bytes | None] = mapped_column(LargeBinary, default=None, deferred=True)
    digest: Mapped[str | None] = mapped_column(String(16), default=None)  # Reranker.digest
    tools: Mapped[list[str]] = mapped_column(JSON)  # the tools it was trained with reports of
    # Whose routes it may move which tool in (app/learning/scope.py): the tools it moves for
    # every key, and key → the tools it moves for that key alone. None: judged before the
    # rule: it serves nobody (and the namespace is retrained).
    confirmed: Mapped[list[str] | None] = mapped_column(JSON(none_as_null=True), default=None)
    own: Mapped[dict[str, list[str]] | None] = mapped_column(JSON(none_as_null=True), default=None)
    calibration: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    # ``weight``: the reranker's gate delta; ``pool``: how many cold candidates it reorders
    # (``app.routing.reranker``); ``relative``: unused since the adapter.
    weight: Mapped[float] = mapped_column(Float)
    pool: Mapped[int] = mapped_column(Integer)
    relative: Mapped[bool] = mapped_column(Boolean, default=False)
    verdict: Mapped[dict[str, Any]] = mapped_column(JSON)  # Verdict.summary()
    steps: Mapped[int] = mapped_column(Integer)  # remembered steps it was trained and judged on
    state: Mapped[str] = mapped_column(String(16))  # serving | refused | retired | rolled_back
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # When it last began to serve (a promotion, or a rollback to it); None: never served.
    served_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)


class LearningSwitch(Base):
    """An admin's switch of a namespace's learning (no row: on, the default)."""

    __tablename__ = "learning_switches"

    namespace: Mapped[str] = mapped_column(String(64), primary_key=True)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
