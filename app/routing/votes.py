"""The namespace's gathered evidence as votes added to stage 2's scores, one kind at a time.

Each vote reads one field of the :class:`NamespaceView` or of the step and adds one
contribution, by name, to the scores (``Scores.votes``): the step's values, its action and
resource, and the cards' examples (``examples.py``). These are the cold ranking's evidence:
what a namespace learns from its reports (the usage prior, query memory) is never a vote but
a feature of the reranker the guard promoted (``reranker.py``). A vote that does not apply
returns ``None``, and the answer then has no contribution of that name at all. Each reads
the scores with the votes before it (a pool of the best tools so far).

Adding a kind of evidence is one field of the view and one function appended to ``VOTES``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from app.routing.actions import PEOPLE, StepAction, agreement, asks_for_people
from app.routing.diversity import top_indices
from app.routing.examples import example_dim, examples_contribution
from app.routing.reading import StepReading
from app.routing.scores import Scores
from app.routing.slots import fit, pattern_checker
from app.routing.types import RouterConfig
from app.routing.view import NamespaceView


@dataclass(frozen=True, slots=True)
class Ballot:
    """What a vote reads besides the scores: the namespace's view, the step's vectors (one
    row per text; ``None``: no embedding), the config, the enabled stages, and the step as
    read (its values, ``reading.py``), the action it asks for (``actions.py``), and its
    parts' texts when it was read as several (``parts.py``). Not who routes: a key's
    evidence reaches its routes only through the learned model (``pipeline.reranked``)."""

    view: NamespaceView
    vectors: np.ndarray | None
    config: RouterConfig
    enabled: frozenset[str]
    reading: StepReading = field(default_factory=lambda: StepReading((), ""))
    asks: StepAction = field(default_factory=StepAction)
    part_texts: tuple[str, ...] = ()
    text: str = ""  # the step as sent, its values in it


def _pool(scores: Scores, size: int) -> np.ndarray:
    """Positions of the best ``size`` scored tools so far."""
    total = scores.total()
    return top_indices(total, size) if size < total.size else np.arange(total.size)


def values_vote(ballot: Ballot, scores: Scores) -> np.ndarray | None:
    """The step's values as evidence (``slots.py``): for each value, how much better a tool
    of the pool fits it than the pool's average tool, summed over the values, times
    ``values_weight``. In a step of several parts a value counts only for the tools whose
    best part holds it (given to every part's tools, it cost Seal-Tools' compound steps).
    ``None`` when the step holds no value or the weight is 0."""
    values, config = ballot.reading.values, ballot.config
    if not values or config.values_weight == 0 or not scores.signal:
        return None
    index = ballot.view.index
    pool = _pool(scores, config.evidence_pool)
    matches = pattern_checker(index.value_check)
    profiles = [index.profiles[t] for t in scores.tool_ids[pool].tolist()]
    fits = np.array(
        [
            [max((fit(v, s, matches, index.ids) for s in p.slots), default=0.0) for p in profiles]
            for v in values
        ],
        dtype=np.float32,
    )
    applies = _value_parts(ballot, scores, pool)
    counted = np.maximum(applies.sum(axis=1, keepdims=True), 1)
    mean = (fits * applies).sum(axis=1, keepdims=True) / counted
    part = np.zeros(scores.tool_ids.size, dtype=np.float32)
    part[pool] = np.float32(config.values_weight) * ((fits - mean) * applies).sum(axis=0)
    return part


def _value_parts(ballot: Ballot, scores: Scores, pool: np.ndarray) -> np.ndarray:
    """(values, pool) 1 where a value counts for a tool: always for a step of one part; for
    a step of several, where the tool's best part holds the value (a value no part holds
    counts for every tool)."""
    values = ballot.reading.values
    if scores.parts is None or not ballot.part_texts:
        return np.ones((len(values), pool.size), dtype=np.float32)
    best = scores.parts[:, pool].argmax(axis=0)
    out = np.ones((len(values), pool.size), dtype=np.float32)
    for v, value in enumerate(values):
        held = [p for p, text in enumerate(ballot.part_texts) if value.text in text]
        if held:
            out[v] = np.isin(best, held).astype(np.float32)
    return out


def action_vote(ballot: Ballot, scores: Scores) -> np.ndarray | None:
    """How well each tool of the pool does what the step asks (``actions.py``), times
    ``action_weight``. ``None`` when the step names no action or the weight is 0."""
    asks, config = ballot.asks, ballot.config
    if not asks.weights or config.action_weight == 0 or not scores.signal:
        return None
    if scores.parts is not None:  # a step of several parts asks for several actions
        return None
    index = ballot.view.index
    pool = _pool(scores, config.evidence_pool)
    part = np.zeros(scores.tool_ids.size, dtype=np.float32)
    agreed = [agreement(asks, index.profiles[t].action) for t in scores.tool_ids[pool].tolist()]
    part[pool] = np.float32(config.action_weight) * np.asarray(agreed, dtype=np.float32)
    return part


def qualifier_vote(ballot: Ballot, scores: Scores) -> np.ndarray | None:
    """Of two look-alikes of the pool, one whose name is the other's and more
    (``delete_files_id_trash`` of ``delete_files_id``, ``admin_conversations_rename`` of
    ``conversations_rename``), the longer one takes ``−qualifier_weight`` when the step says
    none of its added words but some of the shorter name's (a step in the cards' language):
    an agent that means the narrower operation names it. ``None``
    when no such pair is in the pool, for a step of several parts, or at weight 0."""
    config = ballot.config
    if config.qualifier_weight == 0 or not scores.signal or scores.parts is not None:
        return None
    index = ballot.view.index
    pool = _pool(scores, config.evidence_pool)
    named = [index.profiles[t].named for t in scores.tool_ids[pool].tolist()]
    said: frozenset[str] | None = None
    part = np.zeros(scores.tool_ids.size, dtype=np.float32)
    for at, longer in enumerate(named):
        for shorter in named:
            if not shorter or not shorter < longer:
                continue
            if said is None:
                said = frozenset(index.speller.analyse(ballot.text))
            if shorter & said and not (longer - shorter) & said:
                part[pool[at]] = -np.float32(config.qualifier_weight)
                break
    return part if part.any() else None


def people_vote(ballot: Ballot, scores: Scores) -> np.ndarray | None:
    """A step that asks who ("who is in channel C…?", "who approved PR 1203") lifts the tools
    of the pool whose resource is people or what people did (members, users, participants,
    collaborations, reviews: ``actions.PEOPLE``) by ``people_weight``. ``None`` when the step
    asks no such thing, no tool of the pool is one, or at weight 0."""
    config = ballot.config
    if config.people_weight == 0 or not scores.signal or not asks_for_people(ballot.text):
        return None
    index = ballot.view.index
    pool = _pool(scores, config.evidence_pool)
    people = [index.profiles[t].action.resource in PEOPLE for t in scores.tool_ids[pool].tolist()]
    if not any(people):
        return None
    part = np.zeros(scores.tool_ids.size, dtype=np.float32)
    part[pool] = np.float32(config.people_weight) * np.asarray(people, dtype=np.float32)
    return part


Vote = Callable[[Ballot, Scores], np.ndarray | None]


def examples_vote(ballot: Ballot, scores: Scores) -> np.ndarray | None:
    """The cards' examples' contribution when some card has examples and the embedding stage
    is on."""
    examples, index = ballot.view.examples, ballot.view.index
    if examples is None or "embedding" not in ballot.enabled or ballot.vectors is None:
        return None
    if not scores.signal or examples.dim != example_dim(index):
        return np.zeros(scores.tool_ids.size, dtype=np.float32)
    return examples_contribution(
        examples, index, scores.tool_ids, scores.total(), ballot.vectors, ballot.config
    )


VOTES: tuple[tuple[str, Vote], ...] = (
    ("values", values_vote),
    ("action", action_vote),
    ("qualifier", qualifier_vote),
    ("people", people_vote),
    ("examples", examples_vote),
)


def with_votes(ballot: Ballot, scores: Scores) -> Scores:
    """``scores`` with every vote that applies, in ``VOTES`` order."""
    for name, vote in VOTES:
        found = vote(ballot, scores)
        if found is not None:
            scores = dataclasses.replace(scores, votes=(*scores.votes, (name, found)))
    return scores
