"""The miss and parameter kinds of advice, and ``findings``: each wrong case in one kind.

A case is wrong when the tool routed first is not the tool the agent used. Its kind comes
from what the route recorded (was the used tool among the candidates: the feedback's rank)
and from where the used tool stands when the step is routed again on the present cards,
deeper than an answer (:class:`Standing`, read by ``replay.standings``; the recorded stages
are those of the cards then, and a tool not offered has none recorded):

- ``parameter``: the penalty stage sank the used tool. It lacks a required parameter the
  step does not supply, and without the penalty parts it would score at least as high as
  the first (the penalty spared the wrong one). Its changes name how the value is supplied
  in that parameter's description: the words of the steps that carry it as a listed value
  ("(e.g. …)", which the rule check reads), or, when the steps carry none, where it comes
  from. Making it optional or giving it a default is the tool owner's call, not advice.
- ``miss``: the used tool was not offered. The diagnosis names the stage that kept it out
  (the largest deficit against the first: no keyword match, a lower cosine, the penalty…);
  the changes put the steps on the used tool's card: as ``examples``, and their
  distinguishing words in its ``description``. Nothing is written on the other cards.
- ``confusion``: offered, below the first (``doctor.confusions``).

Pure, as doctor.py: every value written comes from the steps' words (``clean_words``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from app.advice.doctor import (
    MAX_EXAMPLE_WORDS,
    MAX_NOT_FOR_WORDS,
    Case,
    Change,
    Finding,
    card_words,
    confusions,
    content_words,
    examples_change,
)
from registry.card import ToolCard

MAX_PARAMS = 2  # parameters one parameter finding edits
MAX_VALUES = 3  # values listed in one parameter's description
# What each stage's deficit says, in the diagnosis of a miss.
STAGE_WORDS = {
    "keyword": "a weaker keyword match",
    "embedding": "a lower cosine",
    "prior": "a lower usage prior",
    "penalty": "the missing-parameter penalty",
    "memory": "less query memory",
    "examples": "weaker card examples",
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


def kind_of(case: Case, stand: Standing | None) -> str:
    if stand is not None and sunk_by_penalty(stand):
        return "parameter"
    return "confusion" if case.offered else "miss"


def lacking(steps: Sequence[str], card: ToolCard) -> list[str]:
    """Words of the steps, most frequent first, in at least half of them, that the card
    lacks: the used tool's side of what a miss is about."""
    counts: Counter[str] = Counter()
    for step in steps:
        counts.update(set(content_words(step)))
    need, have = max(1, len(steps) // 2), card_words(card)
    return [w for w, n in counts.most_common() if n >= need and w not in have]


def kept_out_by(stand: Standing) -> str | None:
    """The stage with the largest deficit of the used tool against the first (None: no
    stages read)."""
    if not stand.stages or not stand.first_stages:
        return None
    names = set(stand.stages) | set(stand.first_stages)
    deficit = {n: stand.first_stages.get(n, 0.0) - stand.stages.get(n, 0.0) for n in names}
    return max(sorted(deficit), key=lambda n: deficit[n])


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


def miss_finding(
    right: ToolCard, steps: Sequence[str], firsts: Sequence[str], stands: Sequence[Standing]
) -> Finding | None:
    unique = list(dict.fromkeys(steps))
    words = lacking(unique, right)[:MAX_NOT_FOR_WORDS]
    changes = examples_change(unique, right)
    line = f"Also for requests about {', '.join(words)}." if words else ""
    if line and line not in right.description:
        changes.append(Change(right.name, "description", f"{right.description.rstrip()} {line}"))
    if not changes:
        return None
    wrong = Counter(firsts).most_common(1)[0][0]
    lack = f"; {right.name}'s card lacks {', '.join(words)}" if words else ""
    diagnosis = (
        f"{len(steps)} step(s) never offered {right.name}, the tool the agent used "
        f"({wrong} came first); {miss_story(stands)}{lack}"
    )
    return Finding("miss", (wrong, right.name), len(steps), unique[:10], diagnosis, changes)


def step_values(step: str, card: ToolCard) -> list[str]:
    """The step's words its tool's card does not contain: what likely carries a value."""
    have = card_words(card)
    return [w for w in content_words(step) if w not in have][:MAX_EXAMPLE_WORDS]


def parameter_change(card: ToolCard, name: str, steps: Sequence[str]) -> Change | None:
    """``name``'s description naming how its value is supplied: the steps' value words as
    listed values, or, when the steps carry none, that the caller's context gives it."""
    props = dict(card.parameters.get("properties") or {})
    prop = dict(props.get(name) or {})
    values = list(dict.fromkeys(v for step in steps for v in step_values(step, card)))
    text = str(prop.get("description", "")).rstrip()
    if values:
        line = f"(e.g. {', '.join(values[:MAX_VALUES])})"
    else:
        line = f"Steps name it without a value: pass it in the route's context as {name}."
    if line in text:
        return None
    prop["description"] = f"{text} {line}".strip()
    props[name] = prop
    return Change(card.name, "parameters", {**card.parameters, "properties": props})


def parameter_finding(
    right: ToolCard, wrong: str, steps: Sequence[str], stands: Sequence[Standing]
) -> Finding | None:
    unique = list(dict.fromkeys(steps))
    missing = Counter(p for s in stands for p in s.missing)
    names = [p for p, _ in missing.most_common(MAX_PARAMS)]
    changes: list[Change] = []
    card = right
    for name in names:
        change = parameter_change(card, name, unique)
        if change is not None:
            changes = [c for c in changes if c.field != "parameters"] + [change]
            card = ToolCard.model_validate({**card.model_dump(), "parameters": change.value})
    if not changes:
        return None
    cuts = sorted({round(s.stages.get("penalty", 0.0), 3) for s in stands})
    diagnosis = (
        f"{len(steps)} step(s) went to {wrong} first while the agent used {right.name}; the "
        f"penalty stage sank {right.name} ({', '.join(map(str, cuts))}) for its required "
        f"{', '.join(names)}, which the steps do not supply, and spared {wrong}: without "
        f"the penalty {right.name} would lead"
    )
    return Finding("parameter", (wrong, right.name), len(steps), unique[:10], diagnosis, changes)


def findings(
    cards: Mapping[str, ToolCard],
    cases: Sequence[Case],
    stages: Mapping[str, str] | None = None,
    standings: Mapping[tuple[str, str], Standing] | None = None,
) -> list[Finding]:
    """Every finding of the wrong cases, most cases first: one per kind and tool pair (a
    miss: per used tool). ``standings``: keyed ``(query, used tool)``; without them no case
    is a parameter one and a miss has no stage named."""
    groups: dict[tuple[str, str, str], list[Case]] = {}
    for case in cases:
        if case.first != case.chosen and case.first in cards and case.chosen in cards:
            stand = (standings or {}).get((case.query, case.chosen))
            kind = kind_of(case, stand)
            first = "" if kind == "miss" else case.first
            groups.setdefault((kind, first, case.chosen), []).append(case)
    stand_of = (standings or {}).get
    pairs = {(w, r): [c.query for c in g] for (k, w, r), g in groups.items() if k == "confusion"}
    found = confusions(cards, pairs, stages)
    for (kind, wrong, right), group in groups.items():
        steps = [c.query for c in group]
        stands = [s for c in group if (s := stand_of((c.query, c.chosen))) is not None]
        if kind == "miss":
            firsts = [c.first for c in group]
            finding = miss_finding(cards[right], steps, firsts, stands)
        elif kind == "parameter":
            finding = parameter_finding(cards[right], wrong, steps, stands)
        else:
            continue
        if finding is not None:
            found.append(finding)
    return sorted(found, key=lambda f: (-f.cases, f.kind, f.tools))
