"""Which signal can read which step–card pair: the script of each side, and the weights it sets.

A step in Chinese aimed at a card written in English gives BM25 nothing to match (the two
sides share no tokens) and the English-only MiniLM nothing to read, while the multilingual
USE half of the default encoder reads both. Fusing with fixed weights lets the two blind
signals' noise outvote the one that sees. So each side gets a **CJK share** (cheap: a
character class count, the card's at index time) and each signal a **visibility** per pair:

* BM25 matches tokens of one script: ``v_k = p·r + (1 − p)·(1 − r)`` — the chance that a
  unit of the step and a unit of the card are in the same script;
* MiniLM reads only the non-CJK text of both: ``v_m = (1 − p)·(1 − r)``;
* the multilingual cosine reads every pair.

(``p`` the step's CJK share, ``r`` the card's.) A signal never gets to rank a pair above the
share it can read, and it cannot overrule the multilingual cosine's favourite tool when it
cannot read that tool either: each visibility is multiplied by the same signal's visibility
of the *lead* (the tool the multilingual cosine ranks first for that text), so an English
look-alike card whose text names the Chinese tool's subject cannot win on keywords the
Chinese card had no way to match. What a signal loses goes to the multilingual cosine, so
every tool's weights add up to the same total (``fusion.language_parts``).

For a step and cards without CJK every visibility is 1 and the router is exactly the one
without this rule. Pure: numpy and regular expressions only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.routing.text import _CJK, parameter_text
from app.routing.types import ToolDoc

_CJK_CHAR = re.compile(f"[{_CJK}]")
_WORD = re.compile(rf"[^\W_{_CJK}]+")
# Chinese words average 1.5–2 characters (Japanese and Korean similar per syllable block):
# counting two CJK characters as one word puts "Send 张三 an email" at 0.25, not 0.4.
CJK_CHARS_PER_WORD = 2.0


def cjk_share(text: str) -> float:
    """The share of ``text``'s words that are CJK, in [0, 1]: CJK characters (two to a word)
    against words of letters; numbers and ids (``o100234``, ``SF123…``) are no language and
    do not count. A text with neither is 0 (read as not CJK)."""
    cjk = len(_CJK_CHAR.findall(text)) / CJK_CHARS_PER_WORD
    if not cjk:
        return 0.0
    latin = sum(1 for word in _WORD.findall(text) if word.isalpha())
    return cjk / (cjk + latin)


# Words that mark a step as written in another Latin-script language: function words that
# are not English ones, and letters English does not use. Two marks (a letter counts double)
# against fewer English stop words, or one in a step of three words or more with none, make
# the step foreign to the English-only signals.
_FOREIGN_WORDS: frozenset[str] = frozenset(
    str.split(
        # German
        "der die das und ist nicht mit den dem des ein eine einen einem zu von für auf aus "
        "bei im ins vom zum zur alle allen mir mich ich sie wir uns unser unsere meine mein "
        "kein keine oder wie was wer wo bitte um bis nach ab über unter "
        # Spanish
        "el la los las del que con por para una un es mi mis todos todas esta este su sus "
        "al lo le de en y desde hasta sobre entre cómo qué quién dónde cuál "
        # French
        "le les des du une et est pour avec dans sur mon ma mes ce cette qui tous toutes au "
        "aux est-ce quel quelle "
        # Portuguese, Italian
        "os da dos das um uma com em meu minha meus não il lo gli della dei per mio mia "
        "tutti tutte che nel nella"
    )
)
_FOREIGN_LETTERS = re.compile(r"[äöüßñ¿¡çãõáéíóúàèìòùâêîôûëïœ]", re.IGNORECASE)
_ENGLISH_WORDS = frozenset(
    [
        "the",
        "an",
        "and",
        "is",
        "are",
        "of",
        "to",
        "for",
        "with",
        "from",
        "my",
        "me",
        "your",
        "all",
        "every",
        "this",
        "that",
        "what",
        "which",
        "who",
        "please",
    ]
)


def foreign_share(text: str) -> float:
    """1.0 when ``text`` reads as another Latin-script language than English (German,
    Spanish, French, Portuguese, Italian), else 0.0: the English-only signals cannot read
    it, as they cannot read CJK."""
    words = [w.lower() for w in _WORD.findall(text) if w.isalpha()]
    marks = sum(w in _FOREIGN_WORDS for w in words)
    marks += 2 * sum(bool(_FOREIGN_LETTERS.search(w)) for w in words)
    english = sum(w in _ENGLISH_WORDS for w in words)
    if marks >= 2 and marks > english:
        return 1.0
    return 1.0 if marks == 1 and english == 0 and len(words) >= 3 else 0.0


def step_share(text: str) -> float:
    """The share of a step that the English-only signals cannot read: its CJK share, or all
    of it when it is written in another Latin-script language."""
    return max(cjk_share(text), foreign_share(text))


def card_cjk_share(doc: ToolDoc) -> float:
    """The CJK share of a card's prose — summary, description, tags, examples, parameter
    descriptions — leaving out the name and parameter names, identifiers in ASCII whatever
    the card's language."""
    _, param_descriptions = parameter_text(doc.parameters)
    prose = (doc.summary, doc.description, " ".join(doc.tags), " ".join(doc.examples))
    return cjk_share(" ".join((*prose, param_descriptions)))


@dataclass(frozen=True, slots=True)
class Visibility:
    """Per text row and tool ``(rows, tools)``: how much of the pair BM25 (``keyword``) and
    the English-only part of the encoder (``english``) can read, in [0, 1]; ``*_pair`` are
    the pair's own (the z-score populations), ``keyword``/``english`` the weights, also
    scaled by the lead's."""

    keyword_pair: np.ndarray
    english_pair: np.ndarray
    keyword: np.ndarray
    english: np.ndarray


def pair_visibility(query_shares: Sequence[float], card_shares: np.ndarray) -> Visibility:
    """Each pair's visibility, before the lead is known (``keyword`` = ``keyword_pair``)."""
    p = np.asarray(query_shares, dtype=np.float64)[:, None]
    r = np.asarray(card_shares, dtype=np.float64)[None, :]
    keyword = p * r + (1.0 - p) * (1.0 - r)
    english = (1.0 - p) * (1.0 - r)
    return Visibility(keyword, english, keyword, english)


def with_lead(vis: Visibility, multilingual: np.ndarray) -> Visibility:
    """``vis`` with each row's weights multiplied by that row's visibility of its lead: the
    tool with the highest multilingual cosine (``multilingual``: ``(rows, tools)``, or one
    row standing for every text)."""
    lead = np.argmax(np.atleast_2d(multilingual), axis=1)
    lead = np.broadcast_to(lead, (vis.keyword_pair.shape[0],))
    rows = np.arange(lead.size)
    keyword = vis.keyword_pair * vis.keyword_pair[rows, lead][:, None]
    english = vis.english_pair * vis.english_pair[rows, lead][:, None]
    return Visibility(vis.keyword_pair, vis.english_pair, keyword, english)


def all_visible(query_shares: Sequence[float], card_shares: np.ndarray) -> bool:
    """Whether every pair is fully visible (no CJK on either side): the rule changes nothing."""
    return not any(query_shares) and not card_shares.any()
