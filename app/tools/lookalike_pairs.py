"""What a look-alike pair shows: the two tools' similarity, the keywords their cards share,
the fields that differ, and a hint for the maintainer (usually a "when not to use me" line
naming the other tool). ``lookalikes.py`` finds the pairs."""

from __future__ import annotations

from pydantic import BaseModel

from app.routing.text import STOPWORDS, words
from app.tools.live_index import Snapshot
from registry.card import ToolCard

COMPARED_FIELDS = ("summary", "description", "parameters", "returns", "errors", "tags", "examples")
MAX_KEYWORDS = 12


class LookalikePair(BaseModel):
    namespace: str
    a: str
    b: str
    similarity: float
    shared_keywords: list[str]
    differing_fields: list[str]
    hint: str


class LookalikeList(BaseModel):
    """The body of ``GET /v1/lookalikes``."""

    pairs: list[LookalikePair]
    complete: bool = True  # false: a namespace's look-alikes are still being computed


def keywords(card: ToolCard) -> set[str]:
    """Content words of the name, summary, description and tags (no stop words, 3+ letters)."""
    text = " ".join([card.name, card.summary, card.description, *card.tags])
    return {w for w in words(text) if len(w) >= 3 and w not in STOPWORDS and not w.isdigit()}


def differing_fields(a: ToolCard, b: ToolCard) -> list[str]:
    return [f for f in COMPARED_FIELDS if getattr(a, f) != getattr(b, f)]


def _names(card: ToolCard, other: str) -> bool:
    """Does the card's text already name the other tool?"""
    return other.lower() in f"{card.summary} {card.description}".lower()


def hint(a: ToolCard, b: ToolCard) -> str:
    a_names_b, b_names_a = _names(a, b.name), _names(b, a.name)
    if a_names_b and b_names_a:
        text = "both cards name each other; make the difference concrete in their summaries"
    elif a_names_b:
        text = f"add a 'when not to use me' line to {b.name} naming {a.name}"
    elif b_names_a:
        text = f"add a 'when not to use me' line to {a.name} naming {b.name}"
    else:
        text = (
            f"add a 'when not to use me' line to {a.name} naming {b.name}, "
            f"and to {b.name} naming {a.name}"
        )
    if a.parameters == b.parameters:
        text += "; their parameters are identical: if they do the same thing, merge them"
    return text


def render_pair(
    snapshot: Snapshot, namespace: str, a: str, b: str, similarity: float
) -> LookalikePair:
    """The pair of the tools ``a`` and ``b`` (a < b) of the snapshot, as an answer lists it."""
    card_a, card_b = snapshot.cards[a], snapshot.cards[b]
    shared = sorted(keywords(card_a) & keywords(card_b))[:MAX_KEYWORDS]
    return LookalikePair(
        namespace=namespace,
        a=a,
        b=b,
        similarity=round(similarity, 4),
        shared_keywords=shared,
        differing_fields=differing_fields(card_a, card_b),
        hint=hint(card_a, card_b),
    )
