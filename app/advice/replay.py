"""The replay: reported steps routed again through the real pipeline against a shadow copy
of a namespace's index with a finding's changes applied. The live index is never touched:
the shadow is built from the snapshot's rows, with the changed cards embedded anew by the
service's encoder. Off the request path (a replay can take seconds)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from app.advice.doctor import Case
from app.embedding.encoders import Encoder, l2_normalise
from app.routing import RouterIndex, embedding_text, route
from app.routing.segments import IndexSegment
from app.tools.catalog import card_to_doc
from registry.card import ToolCard


@dataclass(frozen=True)
class Replay:
    checked: int
    fixed: int
    broken: int

    def offered(self) -> bool:
        """At least one case fixed and none broken."""
        return self.fixed >= 1 and self.broken == 0


def shadow(index: RouterIndex, encoder: Encoder, edited: Mapping[str, ToolCard]) -> RouterIndex:
    """``index`` with the edited cards in place of their rows (a new index)."""
    if not edited:
        return index
    names = sorted(edited)
    vectors = l2_normalise(encoder.encode([embedding_text(card_to_doc(edited[n])) for n in names]))
    docs = (card_to_doc(edited[n]) for n in names)
    segment = IndexSegment.analyse(docs, vectors, index.config.fields)
    merged, _ = index.merged(names, segment)
    return merged


def firsts(index: RouterIndex, encoder: Encoder, queries: Sequence[str]) -> list[str | None]:
    """The tool each query routes to first (None: none)."""
    if not queries:
        return []
    vectors = l2_normalise(encoder.encode(list(queries)))
    out: list[str | None] = []
    for query, vector in zip(queries, vectors, strict=True):
        found = route(index, query, np.asarray(vector), k=1, config=index.config)
        out.append(found[0].name if found else None)
    return out


def replay(
    index: RouterIndex, encoder: Encoder, cases: Sequence[Case], edited: Mapping[str, ToolCard]
) -> Replay:
    """Route every case before and after the edits: a case is fixed when its used tool comes
    first only after, broken when it came first only before. Every reported case is checked,
    the steps reported for other tools too: an edit that wins steps for its tool that were
    reported for another breaks them (the gaming case)."""
    queries = [c.query for c in cases]
    before = firsts(index, encoder, queries)
    after = firsts(shadow(index, encoder, edited), encoder, queries)
    fixed = broken = 0
    for case, was, now in zip(cases, before, after, strict=True):
        fixed += was != case.chosen and now == case.chosen
        broken += was == case.chosen and now != case.chosen
    return Replay(len(cases), fixed, broken)
