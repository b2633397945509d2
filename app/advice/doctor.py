"""Findings from a namespace's reported steps, and the card edits that would fix them. Pure:
the cards and the cases in, findings out; ``replay.py`` checks them before they are offered.
This module holds the confusion kind and what every kind shares; ``kinds.py`` the miss and
parameter kinds, and ``findings``, which sorts each case into one kind.

A case is one reported step: the tool the route put first and the tool the agent used. A
confusion is a group of cases with the same (first, used) pair; its changes put the steps'
distinguishing words on the used tool's card (``examples``) and a "Not for these requests:
use X." line on the first one's ``description`` (``NOT_FOR``: not the steps' words there).
Every value written comes from the steps' words, bounded and stripped of markup
(``clean_words``), so a hostile report cannot write its text in.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.routing.text import STOPWORDS
from registry.card import ToolCard

MAX_WORD = 24  # letters in one word taken from a step
MAX_EXAMPLE_WORDS = 12  # words in one example made from a step
MAX_EXAMPLES = 3  # examples added to a card by one finding
MAX_NOT_FOR_WORDS = 4  # distinguishing words named in a "Not for …" line
# What a confusion writes beside the examples: a "Not for" line on the wrong card with the
# steps' words ("words") or the used tool's name only ("name"); an "Also for" line with the
# words the used card lacks on that card ("right"); or nothing ("none"). "name": the steps'
# words on the wrong card are read by BM25 and the embedding as evidence for it (MetaTool
# held out 668 -> 661 with "words", 671 with "name"; docs/BENCHMARKS.md, bench.quality.advice_sets
# --not-for); with nothing there the doctor's test set breaks a right step.
NOT_FOR = "name"
_MARKUP = re.compile(r"<[^>]*>|\[[^\]]*\]\([^)]*\)|https?://\S+|`[^`]*`|[*_#>{}|\\]")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]*")


@dataclass(frozen=True)
class Case:
    """One reported step: its text, the tool routed first, the tool the agent used, and
    whether that tool was among the route's candidates (the feedback's rank is set)."""

    query: str
    first: str
    chosen: str
    offered: bool = True


@dataclass(frozen=True)
class Change:
    tool: str
    field: str  # description | examples
    value: Any  # the field's whole new value


@dataclass
class Finding:
    kind: str  # confusion | miss | parameter
    tools: tuple[str, str]  # (wrong, right): the tool routed first (the most often), the used
    cases: int
    steps: list[str]
    diagnosis: str
    changes: list[Change]
    replay: dict[str, int] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return finding_id(self.kind, self.tools, self.changes)


def finding_id(kind: str, tools: Sequence[str], changes: Sequence[Change]) -> str:
    """A stable id: the hash of what the finding is and would write (apply finds it again)."""
    body = [kind, list(tools), [[c.tool, c.field, c.value] for c in changes]]
    text = json.dumps(body, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def clean_words(text: str) -> list[str]:
    """The step's plain words: markup, links and code removed, each word bounded."""
    return [w for w in _WORD.findall(_MARKUP.sub(" ", text)) if len(w) <= MAX_WORD]


def content_words(text: str) -> list[str]:
    return [w.lower() for w in clean_words(text) if len(w) >= 3 and w.lower() not in STOPWORDS]


def card_words(card: ToolCard) -> set[str]:
    text = " ".join([card.name.replace("_", " "), card.summary, card.description, *card.examples])
    return set(content_words(text))


def distinguishing(steps: Sequence[str], right: ToolCard, wrong: ToolCard) -> list[str]:
    """Words of the steps, most frequent first, that the right card lacks or the wrong one
    has (what pulled the step the wrong way), in at least half the steps."""
    counts: Counter[str] = Counter()
    for step in steps:
        counts.update(set(content_words(step)))
    need = max(1, len(steps) // 2)
    right_words, wrong_words = card_words(right), card_words(wrong)
    return [
        w
        for w, n in counts.most_common()
        if n >= need and (w not in right_words or w in wrong_words)
    ]


def example_of(step: str) -> str:
    return " ".join(clean_words(step)[:MAX_EXAMPLE_WORDS])


def examples_change(steps: Sequence[str], card: ToolCard) -> list[Change]:
    """The steps (cleaned, at most ``MAX_EXAMPLES`` new ones) added to the card's examples."""
    examples = list(card.examples)
    for step in steps:
        example = example_of(step)
        added = len(examples) - len(card.examples)
        if example and example not in examples and added < MAX_EXAMPLES:
            examples.append(example)
    return [Change(card.name, "examples", examples[-50:])] if examples != card.examples else []


def changes_for(steps: Sequence[str], right: ToolCard, wrong: ToolCard) -> list[Change]:
    """The steps (cleaned) as examples of the right card, and a "Not for" line on the wrong
    (``NOT_FOR``)."""
    changes = examples_change(steps, right)
    if NOT_FOR == "none":
        return changes
    if NOT_FOR == "right":
        have = card_words(right)
        lack = [w for w in distinguishing(steps, right, wrong) if w not in have]
        also = f"Also for requests about {', '.join(lack[:MAX_NOT_FOR_WORDS])}."
        if lack and also not in right.description:
            text = f"{right.description.rstrip()} {also}"
            changes.append(Change(right.name, "description", text))
        return changes
    words = distinguishing(steps, right, wrong)[:MAX_NOT_FOR_WORDS] if NOT_FOR == "words" else []
    line = f"Not for {' '.join(words) or 'these requests'}: use {right.name}."
    if line not in wrong.description:
        changes.append(Change(wrong.name, "description", f"{wrong.description.rstrip()} {line}"))
    return changes


def diagnose(steps: Sequence[str], right: ToolCard, wrong: ToolCard, stage: str) -> str:
    words = distinguishing(steps, right, wrong)[:MAX_NOT_FOR_WORDS]
    matched = sorted(set(words) & card_words(wrong))
    said = f"; the steps' words {', '.join(matched)} match {wrong.name}'s card" if matched else ""
    lacking = sorted(set(words) - card_words(right))
    lack = f"; {right.name}'s card lacks {', '.join(lacking)}" if lacking else ""
    return (
        f"{len(steps)} step(s) went to {wrong.name} first while the agent used {right.name}; "
        f"the {stage} stage put {wrong.name} first{said}{lack}"
    )


def confusions(
    cards: Mapping[str, ToolCard],
    groups: Mapping[tuple[str, str], Sequence[str]],
    stages: Mapping[str, str] | None = None,
) -> list[Finding]:
    """One confusion per (first, used) pair of ``groups`` (the pair's steps). ``stages``: for
    a pair ``"first|used"``, the stage that put the wrong tool first."""
    found = []
    for (wrong, right), steps in groups.items():
        unique = list(dict.fromkeys(steps))
        stage = (stages or {}).get(f"{wrong}|{right}", "ranking")
        changes = changes_for(unique, cards[right], cards[wrong])
        if changes:
            found.append(
                Finding(
                    "confusion",
                    (wrong, right),
                    len(steps),
                    unique[:10],
                    diagnose(unique, cards[right], cards[wrong], stage),
                    changes,
                )
            )
    return found


def edited(cards: Mapping[str, ToolCard], changes: Sequence[Change]) -> dict[str, ToolCard]:
    """The cards the changes touch, edited (validated as any card is)."""
    out: dict[str, ToolCard] = {}
    for change in changes:
        base = out.get(change.tool) or cards[change.tool]
        out[change.tool] = ToolCard.model_validate(
            {**base.model_dump(), change.field: change.value}
        )
    return out
