"""Where the used tool of a wrong step stands when the step is routed again on the present
cards, and what that says: which kind the step is (``kind_of``), and which stage kept the
used tool out (``miss_story``). Pure: ``replay.standings`` routes, this reads.

The recorded stages are those of the cards then, and a tool not offered has none recorded;
so the kind comes from the route's record (was the used tool offered: the feedback's rank)
and from the standing:

- ``parameter``: the penalty stage sank the used tool: it lacks a required parameter the
  step does not supply, and without the penalty parts it would score at least as high as
  the first (``sunk_by_penalty``);
- ``miss``: the used tool was not offered;
- ``confusion``: offered, below the first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from app.advice.finding import Case, Kind

# What each stage's deficit says, in the diagnosis of a miss.
STAGE_WORDS = {
    "keyword": "a weaker keyword match",
    "embedding": "a lower cosine",
    "prior": "a lower usage prior",
    "penalty": "the missing-parameter penalty",
    "memory": "less query memory",
    "examples": "weaker card examples",
    "values": "the step's values fitting its parameters less",
    "action": "the action its name or method says",
    "resource": "the resource its name or path names",
    "name": "the action and resource the first one's name or path says, which no card text moves",
}


@dataclass(frozen=True)
class Standing:
    """The used tool of a case when its step is routed again ``depth`` deep: its rank (1 =
    first; None: beyond the depth), its stages' parts ({} beyond), its required parameters
    with no value in the step, and the first tool with its parts."""

    rank: int | None
    stages: Mapping[str, float] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    first: str = ""
    first_stages: Mapping[str, float] = field(default_factory=dict)
    depth: int = 0


def sunk_by_penalty(stand: Standing) -> bool:
    """Whether the penalty alone put the used tool below the first: it lacks a parameter
    and, both without their penalty parts, it scores at least as high."""
    if stand.rank is None or stand.rank == 1 or not stand.missing:
        return False
    penalty = stand.stages.get("penalty", 0.0)
    mine = sum(stand.stages.values()) - penalty
    theirs = sum(stand.first_stages.values()) - stand.first_stages.get("penalty", 0.0)
    return penalty < 0 and mine >= theirs


def kind_of(case: Case, stand: Standing | None) -> Kind:
    if stand is not None and sunk_by_penalty(stand):
        return "parameter"
    return "confusion" if case.offered else "miss"


def kept_out_by(stand: Standing) -> str | None:
    """The stage with the largest deficit of the used tool against the first (None: no
    stages read)."""
    if not stand.stages or not stand.first_stages:
        return None
    names = set(stand.stages) | set(stand.first_stages)
    deficit = {n: stand.first_stages.get(n, 0.0) - stand.stages.get(n, 0.0) for n in names}
    return max(sorted(deficit), key=lambda n: deficit[n])


# The parts a card's name, method and path give it (app/routing/actions.py): no card text
# the doctor writes moves them.
NAME_PARTS = ("action", "resource")


def by_name(stand: Standing) -> bool:
    """Whether the first leads the used tool by no more than its name's parts do: without
    them they would tie or swap, so no edit of the cards' text can fix the step."""
    lead = sum(stand.first_stages.values()) - sum(stand.stages.values())
    named = sum(stand.first_stages.get(p, 0.0) - stand.stages.get(p, 0.0) for p in NAME_PARTS)
    return 0 < lead <= named


def held_by(stands: Sequence[Standing]) -> str | None:
    """What most often keeps the used tool below the first: ``"name"`` (``by_name``) or the
    stage of its largest deficit (None: none read)."""
    stages = Counter(
        k for s in stands if (k := "name" if by_name(s) else kept_out_by(s)) is not None
    )
    return stages.most_common(1)[0][0] if stages else None


def miss_story(stands: Sequence[Standing]) -> str:
    """Which stage kept the used tool out, over the steps: the most common one."""
    read = [s for s in stands if s.rank is not None]
    if not stands:
        return "it was not among the route's candidates"
    if not read:
        depth = max((s.depth for s in stands), default=0)
        return f"routed again, it stays beyond the top {depth}: neither words nor cosine reach it"
    ranks = sorted(s.rank for s in read if s.rank is not None)
    stages = Counter(k for s in read if (k := kept_out_by(s)) is not None)
    stage = stages.most_common(1)[0][0] if stages else "ranking"
    said = STAGE_WORDS.get(stage, stage)
    if stage == "keyword" and all(s.stages.get("keyword", 0.0) == 0 for s in read):
        said = "no keyword match"
    return f"routed again, it ranks {ranks[len(ranks) // 2]} (median); kept out by {said}"
