"""The parts of a step: one step that asks for several things is read as one part per request.

An agent step such as "look up tomorrow's weather in Lyon and add a reminder to pack an
umbrella" or "查一下明天上海的天气，然后提醒我带伞" needs two tools. Scored as one bag of words
(or one embedding), the first request drowns the second. The router therefore also scores
each part, lets every tool keep its best part's score (``fusion.fuse``), and covers the parts
first when it picks the answer's tools (``cover.py``).

A part ends at sentence punctuation (Latin and CJK), at a line break or a list marker
("1.", "2)", "①", "- "), and at a word that starts a new request: a sequence word ("then",
"after that", "next", "finally", "also", 然后, 并且, 再, 另外…) or "and" before a request
("and add…", "and can you…"). "and" between two things one request acts on ("apples, pears,
and bananas", "a flight and a hotel") does not split, nor does a request with no
conjunction at all ("summarise this article in French"). A piece with fewer than
``min_tokens`` content tokens is glued to the one before it (the first to the one after).
Each part is a piece of the step's own text (``step_parts_spans`` gives where).
"""

from __future__ import annotations

import re

from app.routing.reading import read_step
from app.routing.text import analyse, words
from app.routing.window import step_window

# Words that open a request after "and"/"but"/"then": modals, question words, pronouns…
_REQUEST_CUE = (
    r"also|then|can|could|would|will|please|let|tell|show|give|help|find|suggest|recommend|"
    r"provide|what|how|where|which|when|who|is|are|do|does|i|i'm|i'd|get|check|calculate|"
    r"retrieve|search|create|send|book|translate|generate|analy[sz]e"
)
# …and verbs in the imperative that start a request of their own ("…and add a reminder").
_REQUEST_VERB = (
    r"add|remind|schedule|reserve|buy|pay|transfer|forward|reply|upload|download|save|"
    r"delete|remove|cancel|turn|switch|start|stop|pause|resume|open|close|lock|unlock|dial|"
    r"look|fetch|convert|compute|summari[sz]e|write|draft|compose|draw|compare|"
    r"track|monitor|update|edit|rename|move|submit|invite|publish|notify|alert|estimate|"
    r"predict|forecast|measure|verify|validate|confirm|approve|renew|refund|recharge|"
    r"navigate|locate|identify|detect|transcribe|explain|describe|define|make(?!\s+sure)|"
    r"apply|scan|tell|let|show|give|find|get|check|calculate|retrieve|search|create|"
    r"send|book|translate|generate|analy[sz]e|suggest|recommend|provide"
)
# Words that are verbs or nouns ("email the result", "an email address"): a request only
# when an object follows.
_VERB_OR_NOUN = (
    r"email|text|message|call|order|record|log|note|mark|archive|sort|filter|plan|rate|"
    r"review|read|request|sign|charge|top|exchange|set|share|play|list|print|copy|post|change|"
    r"plot|ask"
)
_OBJECT = (
    r"(?:the|a|an|my|our|your|me|him|her|them|it|us|this|that|these|those|some|all|up|out|"
    r"off)\b|(?-i:[A-Z])|\+?\d"
)
_VERB = rf"(?:{_REQUEST_VERB})\b|(?:{_VERB_OR_NOUN})\s+(?:{_OBJECT})"
_ENDS_WITH_VERB = re.compile(rf"\b(?:{_REQUEST_VERB}|{_VERB_OR_NOUN})\W*$", re.IGNORECASE)
# A numbered item inside a line ("1. ", "2) ", "(3) ", "b) ", "①"); at a line's start also a bullet.
_NUMBERED = r"(?:\(?\d{1,2}[.)]|\(?[a-h]\)|[①-⑩])"
_BULLET = r"(?:\(?\d{1,2}[.)]|\(?[a-h]\)|[①-⑩]|[-*•])"
_SEQUENCE = r"after\s+that|afterwards|next|finally|lastly|additionally"
# Chinese words that open a new request; 再 ("then") only before a verb, not in 再见, 不再…
_ZH_OPENER = (
    r"另外|此外|然后|并且|同时|还有(?!多少|几|没有|吗)|接着|随后|最后|顺便|还要"
    r"|(?<![不一又再])再(?=[帮给把发提告通查订设算翻换安预打关播找搜写记]|\s*[A-Za-z])"
)
# After a comma, a clause that opens with a request verb is a request of its own.
_ZH_AFTER_COMMA = (
    r"帮我|提醒我|告诉我|记得|给我|查一下|订一|叫一|发一|放一|找一|搜一|算一|打开|关掉|播放"
)
_BOUNDARY = re.compile(
    r"(?<=[.!?;])(?<!e\.g\.)(?<!i\.e\.)(?<!etc\.)(?<!\b[A-Z][a-z]\.)\s+"
    r"|(?<=[。！？；])\s*"
    rf"|\s*\n\s*(?:{_BULLET}\s+)?"
    rf"|(?<!\S){_NUMBERED}\s+(?=\w)"
    rf"|,?\s+(?:and|but|then)\s+(?=(?:{_REQUEST_CUE})\b)"
    rf"|(?P<and_verb>\s+and\s+(?={_VERB}))|(?P<comma_verb>,\s+(?={_VERB}))"
    r"|(?:,\s*|\s+)(?:and\s+)?then,?\s+(?=\w)"
    rf"|,\s*(?:and\s+)?(?=(?:{_SEQUENCE})\b)|\s+and\s+(?=(?:{_SEQUENCE})\b)"
    r"|\s+(?:as well as|while also)\s+|,\s+(?:also|plus)\s+"
    rf"|[，,]?\s*(?={_ZH_OPENER})|[，,]\s*(?={_ZH_AFTER_COMMA})"
    r"|(?<=[\u4e00-\u9fff])并(?=[把给帮发提通告将设订查])",
    re.IGNORECASE,
)
# A piece that opens with a verb (after a sequence word) needs one content token ("and
# then summarise it"); any other needs two ("Hello!" is not a request).
_OPENS_REQUEST = re.compile(
    rf"(?:(?:then|next|also|finally|lastly|after\s+that)\W+)?(?:{_VERB})\W*\w",
    re.IGNORECASE,
)
MAX_PARTS = 8
_MIN_TOKENS = 2

Span = tuple[int, int]


def _pieces(text: str) -> list[Span]:
    """The spans between boundaries, stripped (and of a trailing comma), empty ones left out."""
    spans: list[Span] = []
    start = 0
    for found in _BOUNDARY.finditer(text):
        if found.end() == found.start() and found.start() in (0, start):
            continue
        if found.group("and_verb") or found.group("comma_verb"):
            if _ENDS_WITH_VERB.search(text, start, found.start()):
                continue  # "edit and update a record", "add, remove": one request
            if found.group("comma_verb") and len(analyse(text[start : found.start()])) < 2:
                continue  # "Finally, retrieve…", "Please, send…"
        spans.append((start, found.start()))
        start = found.end()
    spans.append((start, len(text)))
    out = []
    for begin, end in spans:
        piece = text[begin:end]
        stripped = piece.strip().rstrip(",，、 \t\n")
        if stripped:
            begin += len(piece) - len(piece.lstrip())
            out.append((begin, begin + len(stripped)))
    return out


def _too_short(piece: str, min_tokens: int) -> bool:
    """Whether a piece says too little to be a request of its own."""
    tokens = len(analyse(piece))
    return tokens < min_tokens and not (tokens and _OPENS_REQUEST.match(piece))


def step_parts_spans(text: str, *, min_tokens: int = _MIN_TOKENS) -> list[Span]:
    """Where each part of ``text`` is, ``(start, end)`` in order; one span for one request."""
    glued: list[Span] = []
    for begin, end in _pieces(text):
        if glued and _too_short(text[begin:end], min_tokens):
            glued[-1] = (glued[-1][0], end)
        else:
            glued.append((begin, end))
    if len(glued) > 1 and _too_short(text[glued[0][0] : glued[0][1]], min_tokens):
        glued[0:2] = [(glued[0][0], glued[1][1])]
    if len(glued) > MAX_PARTS:
        glued = [*glued[: MAX_PARTS - 1], (glued[MAX_PARTS - 1][0], glued[-1][1])]
    return glued


def step_parts(step: str, *, min_tokens: int = _MIN_TOKENS) -> list[str]:
    """The parts of ``step`` in order; a step of one request gives ``[step]`` (stripped)."""
    text = step.strip()
    parts = [text[b:e] for b, e in step_parts_spans(text, min_tokens=min_tokens)]
    return parts or [text]


def query_texts(query: str, *, split: bool = True) -> list[str]:
    """What to embed for a step: the whole step, then each part if there are several
    (``split=False``: the whole step alone, read as one part).

    Pass ``encoder.encode(query_texts(q))`` as ``query_vec`` to ``route`` (row 0 is the whole
    step). A single row also works; parts then share the whole step's embedding. A long
    step is read through ``window.step_window``: row 0 is that window.
    """
    text = step_window(query)
    parts = step_parts(text) if split else [text]
    return [text] if len(parts) < 2 else [text, *parts]


_NAME = re.compile(r"(?<![.!?:;]\s)(?<!^)(?<=\s)[A-Z][\w'-]*")


def as_written(text: str) -> frozenset[str]:
    """The words of ``text`` that are names or the user's own text, which the keyword stage
    reads as written, never as misspelt (``spelling.py``): what it quotes, and the words it
    capitalises inside a sentence ("tweets from Elon Musk"), lower-cased."""
    values = read_step(text).values
    quoted = [w for v in values if v.shape == "quoted" for w in words(v.text)]
    named = [w for found in _NAME.findall(text.strip()) for w in words(found)]
    return frozenset(quoted + named)


def keyword_text(text: str) -> str:
    """What the keyword stage reads of a step's text: its values replaced by their kind or
    left out (``reading.py``), so an id's digits and hex match no card's words. The
    embedding reads the text as sent: masked, it lost (docs/ROUTING.md, "Values")."""
    return read_step(text).model_text
