"""A step's misspelt words, read as the namespace's own words: "lsit my vectr stores",
"craete an isue", "chekc that my token still works".

A word the namespace's cards never use matches nothing in BM25, and a misspelt verb names no
action, so a typo costs a step both stages that tell look-alike tools apart. A word whose
stem (as ``text.analyse`` gives it) is neither in the namespace's vocabulary nor a verb the
action reader knows is read as the known stem one of whose written forms ("creat": create,
"issu": issue) is one edit from it (a letter left out, added, changed, or two neighbours
swapped), the one most cards use when there are several.

Nothing else is touched: a known word; a word of English (``lexicon.py``: "promo" is not a
misspelt "promote", nor "mail" a misspelt "tail"); a word of fewer than ``MIN_LETTERS``
letters (one edit from too many words); one with digits (ids) or letters outside a–z
("lösche", other scripts); a word that begins like a verb of another language and like no
English word ("escribe" is not a misspelt "describe"); what the step quotes ("check the
spelling of 'a glas of water'"); and a word with no known neighbour. Other words of other
languages may be read as a card's English word one edit away, which is what they mean as
often as not ("archiv": docs/ROUTING.md, "Misspelt words").

The candidates are a word's one-edit variants (Norvig's ``edits1``: about 54 per letter)
looked up among the known stems' written forms: nothing to build but that table, and a step
whose words are all known costs one dictionary lookup per word; an unknown word's reading is
remembered (``READ_CACHE``). A step reads at most ``READ_PER_STEP`` words it has not read
before: a step of hundreds of made-up words (a hostile caller's) costs what a long real one
does, and its other unknown words are left as written.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from app.routing.text import kept_words, stem_words

MIN_LETTERS = 4
READ_CACHE = 4096  # unknown words remembered per speller (one namespace's index)
READ_PER_STEP = 40  # unknown words a step may have read that no earlier step had
_PLAIN = re.compile(r"^[a-z]+$")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def one_edit(word: str) -> Iterator[str]:
    """Every string one edit from ``word`` (a–z): a letter left out, two neighbours swapped,
    a letter changed, a letter added (some more than once)."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    for left, right in splits:
        if right:
            yield left + right[1:]
            if len(right) > 1:
                yield left + right[1] + right[0] + right[2:]
            for c in _LETTERS:
                if c != right[0]:
                    yield left + c + right[1:]
        for c in _LETTERS:
            yield left + c + right


def written_forms(stem: str) -> tuple[str, ...]:
    """How a stem is commonly written: itself, and with what the stemmer took off (``creat``
    → create, ``issu`` → issue, ``directori`` → directory)."""
    forms = [stem, stem + "e"]
    if stem.endswith("i"):
        forms.append(stem[:-1] + "y")
    return tuple(forms)


@lru_cache(maxsize=4)
def foreign_beginnings(beginnings: tuple[str, ...], english: frozenset[str]) -> tuple[str, ...]:
    """The beginnings of other languages' words that no English word begins with ("escrib",
    "benenn"; not "list", "send" or "crea"): a word that begins with one is no English typo."""
    longest = max((len(b) for b in beginnings), default=0)
    english_beginnings = {w[:n] for w in english for n in range(1, min(len(w), longest) + 1)}
    return tuple(b for b in beginnings if b not in english_beginnings)


@dataclass(frozen=True, slots=True)
class Speller:
    """Known stems with their weight (how many cards use them), and each stem's written forms
    (form → the stems written so)."""

    known: Mapping[str, int]
    forms: Mapping[str, tuple[str, ...]]
    words: frozenset[str]  # never read as misspelt (English)
    abroad: tuple[str, ...]  # nor words these begin (other languages' verbs)
    read: dict[str, str] = field(default_factory=dict)  # word → what ``fix`` read it as

    @classmethod
    def of(
        cls,
        known: Mapping[str, int],
        words: frozenset[str] = frozenset(),
        abroad: tuple[str, ...] = (),
    ) -> Speller:
        forms: dict[str, list[str]] = {}
        for stem in known:
            if len(stem) >= MIN_LETTERS - 1 and _PLAIN.match(stem):
                for form in written_forms(stem):
                    forms.setdefault(form, []).append(stem)
        return cls(dict(known), {f: tuple(s) for f, s in forms.items()}, words, abroad)

    def fix(self, word: str, stem: str, budget: list[int] | None = None) -> str:
        """``stem`` (of ``word``, lower-case as written) if it is known or may not be read as
        misspelt, else the known stem one of whose written forms is one edit from ``word``.
        ``budget``: ``[n]``, how many more words not read before this call may be read
        (counted down; at 0 such a word is left as written)."""
        if stem in self.known or len(word) < MIN_LETTERS or not _PLAIN.match(word):
            return stem
        if word in self.words or word.startswith(self.abroad) or self._english_stem(stem):
            return stem
        fixed = self.read.get(word)
        if fixed is None:
            if budget is not None:
                if budget[0] <= 0:
                    return stem
                budget[0] -= 1
            close = {s for edit in one_edit(word) for s in self.forms.get(edit, ())}
            fixed = max(close, key=lambda s: (self.known[s], s)) if close else stem
            if len(self.read) >= READ_CACHE:
                self.read.clear()
            self.read[word] = fixed
        return fixed

    def _english_stem(self, stem: str) -> bool:
        """A stem that is itself an English word ("tweet" of "tweets"), long enough not to
        be one by chance ("ra" of "raed")."""
        return len(stem) >= MIN_LETTERS and stem in self.words

    def analyse(self, text: str, keep: Collection[str] = ()) -> list[str]:
        """``text.analyse(text)`` with each misspelt word read as the stem meant, except the
        words of ``keep`` (what the step quotes: a name or a text of the user's own)."""
        kept = kept_words(text)
        budget = [READ_PER_STEP]
        return [
            s if w in keep else self.fix(w, s, budget)
            for w, s in zip(kept, stem_words(kept), strict=True)
        ]
