"""The replay: reported steps routed again through the real pipeline against a shadow copy
of a namespace's index with a finding's changes applied. The live index is never touched:
the shadow is built from the snapshot's rows, with the changed cards embedded anew by the
service's encoder. Off the request path (a replay can take seconds)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from app.advice.doctor import Case, Finding, edited, findings
from app.embedding.encoders import Encoder, l2_normalise
from app.routing import RouterIndex, embedding_text, query_texts, route
from app.routing.segments import IndexSegment
from app.tools.catalog import card_to_doc
from registry.card import ToolCard


@dataclass(frozen=True)
class Replay:
    checked: int
    fixed: int
    broken: int
    won: int = 0  # cases an edited tool comes first for only after (fixed ones included)

    def offered(self) -> bool:
        """At least one case fixed, none broken, and no case won for an edited tool beyond
        the fixed ones: an edit that only wins usage for its tool (the gaming case) is not."""
        return self.fixed >= 1 and self.broken == 0 and self.won <= self.fixed


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
    """The tool each query routes to first (None: none), embedded as a route embeds a step
    (its texts: ``query_texts``, one model call each)."""
    out: list[str | None] = []
    for query in queries:
        texts = query_texts(query)
        vectors = np.asarray(encoder.encode(texts), dtype=np.float32) if texts else None
        found = route(index, query, vectors, k=1, config=index.config, texts=texts)
        out.append(found[0].name if found else None)
    return out


def replay(
    index: RouterIndex, encoder: Encoder, cases: Sequence[Case], edited: Mapping[str, ToolCard]
) -> Replay:
    """Route every case before and after the edits: a case is fixed when its used tool comes
    first only after, broken when it came first only before, won when an edited tool comes
    first only after. Every reported case is checked, the steps reported for other tools too:
    an edit that wins steps for its tool that were reported for another breaks them, or wins
    more than it fixes (the gaming case)."""
    queries = [c.query for c in cases]
    before = firsts(index, encoder, queries)
    after = firsts(shadow(index, encoder, edited), encoder, queries)
    fixed = broken = won = 0
    for case, was, now in zip(cases, before, after, strict=True):
        fixed += was != case.chosen and now == case.chosen
        broken += was == case.chosen and now != case.chosen
        won += now in edited and was != now
    return Replay(len(cases), fixed, broken, won)


def heal(
    index: RouterIndex,
    cards: Mapping[str, ToolCard],
    encoder: Encoder,
    cases: Sequence[Case],
    rounds: int = 10,
) -> tuple[RouterIndex, dict[str, ToolCard], list[Finding], int]:
    """Apply every finding the replay offers, worst first, each replayed on the cards as the
    ones before it left them, for up to ``rounds`` passes: the index and cards after, the
    findings applied, and how many the last pass refused. (What applying each offered advice in turn
    does, without a database: the measured test and bench/advice_eval.py.)"""
    current, applied, refused = dict(cards), [], 0
    for _ in range(rounds):
        wrong = firsts(index, encoder, [c.query for c in cases])
        now = [Case(c.query, w or "", c.chosen) for c, w in zip(cases, wrong, strict=True)]
        progressed, refused = False, 0
        for finding in findings(current, now):
            changed = edited(current, finding.changes)
            result = replay(index, encoder, now, changed)
            finding.replay = {"checked": result.checked, "fixed": result.fixed, "broken": 0}
            if not result.offered():
                refused += 1
                continue
            index, progressed = shadow(index, encoder, changed), True
            current.update(changed)
            applied.append(finding)
            break  # the others are found again on the new state
        if not progressed:
            break
    return index, current, applied, refused
