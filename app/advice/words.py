"""What the card doctor may write into a card: vetted words, never a reporter's text.

A step is one reporter's text; a card is read by every key's routes and goes out in the
OpenAI, Anthropic and MCP exports, into other agents' prompts. So the doctor weighs reports
by trust (bounded influence, app/loop/trust.py) as the prior and memory do, and a word of
the steps is written only when it is **vetted**:

- plain: 3 to 24 letters (``PLAIN``): no digits, hyphens, apostrophes, markup or links, so
  "include-user-api-keys", "i'm" and a phone number are no words here;
- not a stopword, nor a word about how an agent should behave (``INSTRUCTIONS``: "ignore",
  "always", "first"…);
- backed: in at least ``MIN_STEPS`` distinct steps, reported by enough distinct keys that
  bounded influence confirms it for every key (``agreement(keys, needed) >= 1``): one key's
  flood, or one step's filler, is not enough;
- telling the tools apart: in a share of the finding's steps at least twice its share of the
  namespace's other reported steps.

A description line names the vetted words in at least half the finding's steps. An example
is made of a step's runs of backed words (all but the last rule), holding a vetted one
(``example_of``), bounded in words and in number: no example is one key's step copied, nor a
step with a hole where its number was.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from app.advice.finding import Case
from app.loop.trust import agreement
from app.routing.text import STOPWORDS, analyse
from registry.card import ToolCard

MIN_STEPS = 2  # distinct steps a written word, and a finding, needs
MAX_EXAMPLE_WORDS = 10  # words in one example
MAX_EXAMPLES = 3  # examples one finding adds to a card
MAX_LINE_WORDS = 4  # words named in an "Also for requests about …" line
PLAIN = re.compile(r"[a-z]{3,24}")
# Words about an agent's conduct, not about what a request asks: never written into a card.
INSTRUCTIONS = frozenset(
    {"ignore", "disregard", "override", "bypass", "always", "never", "must", "should"}
    | {"instead", "first", "prefer", "call", "calls", "use", "include", "skip", "pretend"}
    | {"forget", "previous", "instruction", "instructions", "prompt", "system", "assistant"}
)
# Verbs that say what a request asks (the action, app/routing/actions.py): an example may
# keep them, as it keeps stopwords, beside the words it holds for what they tell apart.
VERBS = frozenset(
    {"show", "list", "get", "find", "fetch", "display", "look", "give", "tell", "view", "pull"}
    | {"send", "create", "make", "add", "update", "change", "set", "delete", "remove", "cancel"}
    | {"check", "search", "track", "book", "convert", "translate", "place", "placed", "buy"}
)
_MARKUP = re.compile(r"<[^>]*>|\[[^\]]*\]\([^)]*\)|https?://\S+|`[^`]*`|[*_#>{}|\\]")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]*")


def clean_words(text: str) -> list[str]:
    """The text's words, markup, links and code removed (as the text shows them)."""
    return [w for w in _WORD.findall(_MARKUP.sub(" ", text)) if len(w) <= 24]


def plain_words(text: str) -> list[str]:
    """The text's words that may be written: plain, lower-case, no stopword or instruction."""
    lowered = (w.lower() for w in clean_words(text))
    return [w for w in lowered if PLAIN.fullmatch(w) and w not in STOPWORDS | INSTRUCTIONS]


def card_words(card: ToolCard) -> set[str]:
    text = " ".join([card.name.replace("_", " "), card.summary, card.description, *card.examples])
    return set(plain_words(text))


def vocabulary(cards: Iterable[ToolCard]) -> frozenset[str]:
    """The plain words the namespace's cards hold: their publishers' words, not a reporter's."""
    return frozenset(w for card in cards for w in card_words(card))


@lru_cache(maxsize=4096)
def stem(word: str) -> str:
    """The word's stem, as the index reads it ("orders" and "order" are one word)."""
    stems = analyse(word)
    return stems[0] if stems else word


@dataclass(frozen=True)
class Vetted:
    """The vetted words of some steps: each (its most common form) with its share of the
    steps, the most shared first; every form of them the steps hold; and every form of the
    words that are backed but tell no tool apart (an example may hold them beside these)."""

    shares: Mapping[str, float] = field(default_factory=dict)
    forms: frozenset[str] = frozenset()
    backed: frozenset[str] = frozenset()

    def __iter__(self) -> Iterator[str]:
        return iter(self.shares)

    def __bool__(self) -> bool:
        return bool(self.shares)


def _steps(cases: Iterable[Case]) -> dict[str, set[str]]:
    """Each distinct step (its text, lower-cased) and the keys that reported it."""
    keys: dict[str, set[str]] = defaultdict(set)
    for case in cases:
        keys[" ".join(case.query.lower().split())].add(case.key)
    return keys


def _shares(
    steps: dict[str, set[str]],
) -> tuple[dict[str, int], dict[str, set[str]], dict[str, Counter[str]]]:
    """Each plain word's stem: in how many of the steps, the keys of those steps, its forms."""
    count: dict[str, int] = defaultdict(int)
    keys: dict[str, set[str]] = defaultdict(set)
    forms: dict[str, Counter[str]] = defaultdict(Counter)
    for step, who in steps.items():
        words = plain_words(step)
        for word in words:
            forms[stem(word)][word] += 1
        for root in {stem(w) for w in words}:
            count[root] += 1
            keys[root] |= who
    return count, keys, forms


def vetted(group: Sequence[Case], others: Sequence[Case], needed: int) -> Vetted:
    """The group's vetted words (module docstring), each with its share of the group's
    distinct steps. ``others``: the namespace's other reported steps; ``needed``: the keys
    that confirm evidence (``trust_keys``)."""
    mine, theirs = _steps(group), _steps(others)
    count, keys, forms = _shares(mine)
    elsewhere = _shares(theirs)[0]
    shares, kept, backed = {}, set(), set()
    for root, n in count.items():
        share = n / len(mine)
        other = elsewhere.get(root, 0) / len(theirs) if theirs else 0.0
        if n < MIN_STEPS or agreement(len(keys[root]), needed) < 1:
            continue
        backed |= set(forms[root])
        if other <= share / 2:
            shares[forms[root].most_common(1)[0][0]] = share
            kept |= set(forms[root])
    ordered = dict(sorted(shares.items(), key=lambda item: (-item[1], item[0])))
    return Vetted(ordered, frozenset(kept), frozenset(backed))


def line_words(words: Vetted, card: ToolCard) -> list[str]:
    """The vetted words in at least half the steps that ``card`` lacks, for its line."""
    have = {stem(w) for w in card_words(card)}
    lacking = [w for w, share in words.shares.items() if share >= 0.5 and stem(w) not in have]
    return lacking[:MAX_LINE_WORDS]


def example_of(step: str, words: Vetted, vocabulary: frozenset[str] = frozenset()) -> str:
    """The step's runs of allowed words, and the stopwords between them: backed ``words``,
    words the namespace's cards hold already (``vocabulary``: the publishers' words) and
    ``VERBS``. A run ends at any other word, and starts and ends with an allowed one; the
    example is bounded, and "" unless it holds two allowed words, one of which tells the
    tools apart: else too little of the step may be written to say anything."""
    allowed = words.backed | vocabulary | VERBS
    runs: list[list[str]] = [[]]
    for word in clean_words(step):
        lower = word.lower()
        if lower in allowed or (lower in STOPWORDS and runs[-1]):
            runs[-1].append(word)
        elif runs[-1]:
            runs.append([])
    kept: list[str] = []
    for run in runs:
        while run and run[-1].lower() not in allowed:
            run.pop()
        kept += run
    kept = kept[:MAX_EXAMPLE_WORDS]
    said = {w.lower() for w in kept}
    return " ".join(kept) if len(allowed & said) >= 2 and words.forms & said else ""


def examples_of(
    steps: Sequence[str], words: Vetted, card: ToolCard, vocabulary: frozenset[str] = frozenset()
) -> list[str]:
    """The card's examples with at most ``MAX_EXAMPLES`` new ones made of the steps
    (``example_of``); the card's own when none is new."""
    examples = list(card.examples)
    for step in steps:
        example = example_of(step, words, vocabulary)
        if (
            example
            and example not in examples
            and len(examples) - len(card.examples) < MAX_EXAMPLES
        ):
            examples.append(example)
    return examples[-50:]
