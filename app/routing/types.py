"""Value types of the ranking core: a tool card as the router sees it, the config, a candidate.

Pure data: no web framework, no ORM, no model. Every weight of the pipeline lives in
:class:`RouterConfig`, with the default that ``bench/quality/tune_routing.py`` chose and
``docs/ROUTING.md`` justifies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.routing.confidence import Evidence

STAGE_NAMES: tuple[str, ...] = ("keyword", "embedding", "prior", "penalty")
ALL_STAGES: frozenset[str] = frozenset(STAGE_NAMES)


@dataclass(frozen=True, slots=True)
class ToolDoc:
    """What the router knows of one tool card."""

    name: str
    summary: str
    description: str
    tags: tuple[str, ...] = ()
    parameters: Mapping[str, Any] = field(default_factory=dict)
    examples: tuple[str, ...] = ()
    pinned: bool = False
    # What the card says of its operation beyond its text: ``METHOD /path`` of an imported
    # OpenAPI operation, its MCP annotations (``readOnlyHint``…), its result's JSON Schema.
    operation: str = ""
    annotations: Mapping[str, bool] = field(default_factory=dict)
    returns: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class FieldWeights:
    """How many times each card field counts in the BM25 document (BM25F by repetition)."""

    name: int = 3
    summary: int = 2
    description: int = 1
    tags: int = 2
    param_names: int = 1
    param_descriptions: int = 1
    examples: int = 1


@dataclass(frozen=True)
class RouterConfig:
    """Every weight and limit of the pipeline. ``docs/ROUTING.md`` explains each default."""

    # Stage 1: keyword (BM25, Robertson et al. 1994; Lucene variant, Kamphuis et al. 2020).
    fields: FieldWeights = field(default_factory=FieldWeights)
    bm25_method: str = "lucene"
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    pool_size: int = 50
    # Stage 2: fusion of keyword and embedding evidence.
    fusion: str = "zscore"
    keyword_weight: float = 0.2
    embedding_weight: float = 0.8
    part_weight: float = 1.0
    rrf_k: float = 60.0
    # Remembered steps are kept projected on this many principal directions (0: all).
    memory_dims: int = 128
    # Card examples (examples.py): examples_weight * the best vote of a card's example, read
    # by the multilingual columns, for the best examples_pool tools by fused score; a step
    # whose cosine with the example is at or below examples_floor gets no vote.
    examples_weight: float = 1.0
    examples_floor: float = 0.3
    examples_pool: int = 20
    # The step's values and action (votes.py): for the best evidence_pool tools so far,
    # values_weight times how much better each fits the step's values than the pool's average
    # tool (slots.py), action_weight times how well it does what the step asks (actions.py).
    values_weight: float = 0.2
    action_weight: float = 0.2
    # A look-alike whose name adds words the step does not say (votes.qualifier_vote).
    qualifier_weight: float = 0.1
    # A step that asks who, for tools whose resource is people (votes.people_vote).
    people_weight: float = 0.1
    evidence_pool: int = 50
    # Added to pinned default tools when the query matches no keyword (the answer's "prior"
    # stage: since issue 41 the usage prior moves a route only as a reranker's feature).
    pinned_boost: float = 0.5
    # Stage 3: rule check.
    missing_param_penalty: float = 0.1
    max_penalised_params: int = 3
    # The share of that penalty a mere mention of the parameter's name takes away (0: none;
    # 1: a mentioned parameter costs nothing). The answer's missing_required ignores it.
    mention_softening: float = 0.0
    # Diversity in the top-k (Carbonell & Goldstein 1998); 1.0 switches MMR off.
    mmr_lambda: float = 0.8
    mmr_multi_part_only: bool = True


@dataclass(frozen=True, slots=True)
class RouteOptions:
    """What one request asks of a route (``Router.route``): how many tools (``k``), the
    agent's ``context`` (values for required parameters), a ``tags`` filter, the floors
    below which a candidate is left out (``min_score`` as shown, ``min_confidence``), and
    whether to read the step as its parts (``split``), and who routes (``key``: its own
    evidence that other keys have not confirmed weighs fully in its routes,
    app/loop/trust.py; ``""`` is every request without a key)."""

    k: int = 3
    context: Mapping[str, Any] | None = None
    tags: Sequence[str] | None = None
    min_score: float | None = None
    min_confidence: float | None = None
    split: bool = True
    key: str = ""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One routed tool: its score and each stage's additive part of it (relative: they
    explain the ranking), its confidence (absolute: the estimated chance it is the tool the
    step needs, ``confidence.py``) with the evidence it was read from, the required
    parameters with no value, each context value that breaks its parameter's schema as
    ``(parameter, reason)``, and, for a step read as several parts, the part it serves
    (an index into the step's parts: ``parts.step_parts``)."""

    name: str
    score: float
    stages: dict[str, float]
    missing_required: tuple[str, ...]
    confidence: float
    evidence: Evidence
    invalid_context: tuple[tuple[str, str], ...] = ()
    part: int | None = None
