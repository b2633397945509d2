"""The three kinds of advice, and ``findings``: each group of wrong steps made a finding, or a
note that says why it is none. Pure: the cards and the cases in, findings out; the replay
(``replay.py``) checks a finding before it is offered.

Cases are grouped by kind (``standing.kind_of``) and tool pair (a miss: by used tool). A
group makes a finding only when bounded influence lets it write into a card that every key
reads: at least ``MIN_STEPS`` distinct steps, reported by enough distinct keys to be
confirmed (``trust.agreement(keys, needed) >= 1``; ``needed`` is ``trust_keys``). Its changes
write vetted words only (``words.py``):

- ``confusion`` (offered, below the first): examples of the used tool's card made of the
  steps' vetted words, and a "Not for these requests: use X." line on the first one's
  description, naming the used tool only (the steps' words there are read by BM25 and the
  embedding as evidence for it: docs/ROUTING.md, the card doctor);
- ``miss`` (never offered): the examples, and "Also for requests about …" with the vetted
  words the used card lacks, on the used card only;
- ``parameter`` (the penalty sank the used tool): how that parameter's value is supplied, in
  its description: the steps' vetted words the card lacks as listed values ("(e.g. …)", which
  the rule check reads), or, without any, that the route's context gives it. Making it
  optional or giving it a default is the tool owner's call, not advice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.advice.finding import Case, Change, Finding, Kind, Note
from app.advice.standing import Standing, kind_of, miss_story
from app.advice.words import (
    MIN_STEPS,
    Vetted,
    card_words,
    examples_of,
    line_words,
    stem,
    vetted,
    vocabulary,
)
from app.loop.trust import agreement
from registry.card import ToolCard

MAX_PARAMS = 2  # parameters one parameter finding edits
MAX_VALUES = 3  # values listed in one parameter's description
MAX_SHOWN = 10  # steps an answer shows of a finding


@dataclass(frozen=True)
class Group:
    """The wrong cases of one kind and tool pair, with what the doctor reads beside them."""

    kind: Kind
    right: ToolCard
    wrong: str  # the tool routed first (for a miss: the most often)
    cases: Sequence[Case]
    words: Vetted  # the steps' words a card may be given
    vocabulary: frozenset[str]  # the words the namespace's cards hold already
    stands: Sequence[Standing]

    @property
    def steps(self) -> list[str]:
        return list(dict.fromkeys(c.query for c in self.cases))

    @property
    def keys(self) -> int:
        return len({c.key for c in self.cases})

    def finding(self, diagnosis: str, changes: list[Change]) -> Finding:
        tools = (self.wrong, self.right.name)
        shown = self.steps[:MAX_SHOWN]
        return Finding(self.kind, tools, len(self.cases), shown, diagnosis, changes, self.keys)

    def note(self, code: str, reason: str) -> Note:
        tools = (self.wrong, self.right.name)
        return Note(self.kind, tools, len(self.cases), self.keys, code, reason)


def examples_change(group: Group) -> list[Change]:
    card = group.right
    examples = examples_of(group.steps, group.words, card, group.vocabulary)
    return [Change(card.name, "examples", examples)] if examples != card.examples else []


def confusion(group: Group, wrong: ToolCard, stage: str) -> Finding | None:
    changes = examples_change(group)
    line = f"Not for these requests: use {group.right.name}."
    if line not in wrong.description:
        changes.append(Change(wrong.name, "description", f"{wrong.description.rstrip()} {line}"))
    if not changes:
        return None
    words = list(group.words)[:4]
    wrong_has = {stem(w) for w in card_words(wrong)}
    right_has = {stem(w) for w in card_words(group.right)}
    matched = sorted(w for w in words if stem(w) in wrong_has)
    said = f"; the steps' words {', '.join(matched)} match {wrong.name}'s card" if matched else ""
    lacking = sorted(w for w in words if stem(w) not in right_has)
    lack = f"; {group.right.name}'s card lacks {', '.join(lacking)}" if lacking else ""
    diagnosis = (
        f"{len(group.cases)} step(s) went to {wrong.name} first while the agent used "
        f"{group.right.name}; the {stage} stage put {wrong.name} first{said}{lack}"
    )
    return group.finding(diagnosis, changes)


def miss(group: Group) -> Finding | None:
    right = group.right
    words = line_words(group.words, right)
    changes = examples_change(group)
    line = f"Also for requests about {', '.join(words)}." if words else ""
    if line and line not in right.description:
        changes.append(Change(right.name, "description", f"{right.description.rstrip()} {line}"))
    if not changes:
        return None
    lack = f"; {right.name}'s card lacks {', '.join(words)}" if words else ""
    diagnosis = (
        f"{len(group.cases)} step(s) never offered {right.name}, the tool the agent used "
        f"({group.wrong} came first); {miss_story(group.stands)}{lack}"
    )
    return group.finding(diagnosis, changes)


def parameter_change(card: ToolCard, name: str, values: Sequence[str]) -> Change | None:
    """``name``'s description naming how its value is supplied: ``values`` (the steps'
    vetted words the card lacks) as listed values, or, without any, that the caller's
    context gives it."""
    props = dict(card.parameters.get("properties") or {})
    prop = dict(props.get(name) or {})
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


def parameter(group: Group) -> Finding | None:
    missing = Counter(p for s in group.stands for p in s.missing)
    names = [p for p, _ in missing.most_common(MAX_PARAMS)]
    have = {stem(w) for w in card_words(group.right)}
    values = [w for w in group.words if stem(w) not in have]
    change, card = None, group.right
    for name in names:
        change = parameter_change(card, name, values) or change
        if change is not None:
            card = ToolCard.model_validate({**card.model_dump(), "parameters": change.value})
    if change is None:
        return None
    right = group.right.name
    cuts = sorted({round(s.stages.get("penalty", 0.0), 3) for s in group.stands})
    diagnosis = (
        f"{len(group.cases)} step(s) went to {group.wrong} first while the agent used {right}; "
        f"the penalty stage sank {right} ({', '.join(map(str, cuts))}) for its required "
        f"{', '.join(names)}, which the steps do not supply, and spared {group.wrong}: "
        f"without the penalty {right} would lead"
    )
    return group.finding(diagnosis, [change])


def refusal(group: Group, needed: int) -> Note | None:
    """Why bounded influence lets the group write nothing (None: it may)."""
    said = f"{len(group.cases)} misroute(s) of {group.right.name} ({group.wrong} first)"
    steps = len(group.steps)
    if steps < MIN_STEPS:
        need = f"the doctor needs {MIN_STEPS} distinct steps"
        return group.note("too_few_steps", f"{said}, {steps} distinct step(s); {need}")
    if agreement(group.keys, needed) < 1:
        need = f"the doctor needs reports from {needed} keys (trust_keys)"
        return group.note("too_few_keys", f"{said} from {group.keys} key(s); {need}")
    return None


def made(group: Group, cards: Mapping[str, ToolCard], stage: str) -> Finding | None:
    if group.kind == "confusion":
        return confusion(group, cards[group.wrong], stage)
    return miss(group) if group.kind == "miss" else parameter(group)


def grouped(
    cards: Mapping[str, ToolCard],
    cases: Sequence[Case],
    standings: Mapping[tuple[str, str], Standing],
    needed: int,
) -> list[Group]:
    """The wrong cases by kind and tool pair (a miss: by used tool), most cases first."""
    groups: dict[tuple[Kind, str, str], list[Case]] = {}
    for case in cases:
        if case.first != case.chosen and case.first in cards and case.chosen in cards:
            kind = kind_of(case, standings.get((case.query, case.chosen)))
            first = "" if kind == "miss" else case.first
            groups.setdefault((kind, first, case.chosen), []).append(case)
    out, known = [], vocabulary(cards.values())
    for (kind, first, right), group in groups.items():
        wrong = first or Counter(c.first for c in group).most_common(1)[0][0]
        mine = {id(c) for c in group}
        others = [c for c in cases if id(c) not in mine]
        stands = [s for c in group if (s := standings.get((c.query, c.chosen))) is not None]
        words = vetted(group, others, needed)
        out.append(Group(kind, cards[right], wrong, group, words, known, stands))
    return sorted(out, key=lambda g: (-len(g.cases), g.kind, g.wrong, g.right.name))


def findings(
    cards: Mapping[str, ToolCard],
    cases: Sequence[Case],
    stages: Mapping[str, str] | None = None,
    standings: Mapping[tuple[str, str], Standing] | None = None,
    needed: int = 1,
) -> tuple[list[Finding], list[Note]]:
    """Every finding of the wrong cases, most cases first, and a note for each group that
    makes none. ``stages``: for a pair ``"first|used"``, the recorded stage that put the wrong
    tool first; ``standings``: keyed ``(query, used tool)`` (without them no case is a
    parameter one and a miss has no stage named); ``needed``: ``trust_keys``."""
    found, notes = [], []
    for group in grouped(cards, cases, standings or {}, needed):
        note = refusal(group, needed)
        stage = (stages or {}).get(f"{group.wrong}|{group.right.name}", "ranking")
        finding = None if note else made(group, cards, stage)
        if finding is not None:
            found.append(finding)
        else:
            words = ", ".join(group.words) or "none"
            why = f"no vetted word of the steps to write (vetted: {words})"
            notes.append(note or group.note("no_words", why))
    return found, notes
