"""What the card doctor reads and answers: a reported step (``Case``), a card edit
(``Change``), a finding made of edits (``Finding``), and why a group of wrong steps has none
(``Note``). Pure data; the kinds (``kinds.py``) make them, the replay checks them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from app.loop.trust import ANONYMOUS
from registry.card import ToolCard

Kind = Literal["confusion", "miss", "parameter"]


@dataclass(frozen=True)
class Case:
    """One reported step: its text, the tool routed first, the tool the agent used, whether
    that tool was among the route's candidates (the feedback's rank is set), and whose
    evidence the report is (``trust.evidence_key``; ``ANONYMOUS``: no key)."""

    query: str
    first: str
    chosen: str
    offered: bool = True
    key: str = ANONYMOUS


@dataclass(frozen=True)
class Change:
    tool: str
    field: Literal["description", "examples", "parameters"]
    value: Any  # the field's whole new value


@dataclass
class Finding:
    kind: Kind
    tools: tuple[str, str]  # (wrong, right): the tool routed first (the most often), the used
    cases: int
    steps: list[str]
    diagnosis: str
    changes: list[Change]
    keys: int = 1  # distinct keys whose reports the finding is made of
    replay: dict[str, int] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return finding_id(self.kind, self.tools, self.changes)


@dataclass(frozen=True)
class Note:
    """A group of wrong steps the doctor offers no edit for, and why (``code``: a stable word;
    ``reason``: the sentence shown)."""

    kind: Kind
    tools: tuple[str, str]
    cases: int
    keys: int
    code: str  # too_few_steps | too_few_keys | no_words | broke | fixed_nothing | gaming | ...
    reason: str


def finding_id(kind: str, tools: Sequence[str], changes: Sequence[Change]) -> str:
    """A stable id: the hash of what the finding is and would write (apply finds it again)."""
    body = [kind, list(tools), [[c.tool, c.field, c.value] for c in changes]]
    text = json.dumps(body, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def edited(cards: Mapping[str, ToolCard], changes: Sequence[Change]) -> dict[str, ToolCard]:
    """The cards the changes touch, edited (validated as any card is)."""
    out: dict[str, ToolCard] = {}
    for change in changes:
        base = out.get(change.tool) or cards[change.tool]
        out[change.tool] = ToolCard.model_validate(
            {**base.model_dump(), change.field: change.value}
        )
    return out
