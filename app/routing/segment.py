"""Query segmentation: one request that asks for several things becomes one segment per ask.

An agent step such as "Scan example.com for vulnerabilities. Next, monitor the CPU of
192.168.1.7, and also compute the mutual information of 'a' and 'b'" needs three tools. Scored
as one bag of words (or one embedding), the first ask drowns the others. The router therefore
also scores each segment and lets every tool keep its best segment score (see
``fusion.fuse_segments``): the tool that serves the second ask is not outvoted by the first.

Segments end at sentence punctuation (Latin and CJK), at a coordinating conjunction that starts
a new request (", and can you…", "and also", "as well as", "另外"…), and a segment with fewer
than ``min_tokens`` content tokens is glued to the one before it.
"""

from __future__ import annotations

import re

from app.routing.text import analyse
from app.routing.window import step_window

_REQUEST_CUE = (
    r"also|then|can|could|would|will|please|let|tell|show|give|help|find|suggest|recommend|"
    r"provide|what|how|where|which|when|who|is|are|do|does|i|i'm|i'd|get|check|calculate|"
    r"retrieve|search|create|send|book|translate|generate|analy[sz]e"
)
_BOUNDARY = re.compile(
    r"(?<=[.!?;])(?<!e\.g\.)(?<!i\.e\.)(?<!etc\.)(?<!\b[A-Z][a-z]\.)\s+"
    r"|(?<=[。！？；])\s*"
    rf"|,?\s+(?:and|but|then)\s+(?=(?:{_REQUEST_CUE})\b)"
    r"|\s+(?:as well as|while also)\s+|,\s+(?:also|plus)\s+|\n+"
    r"|(?=另外|此外|然后|并且|同时|还有)",
    re.IGNORECASE,
)
MAX_SEGMENTS = 8
_MIN_TOKENS = 2


def query_segments(query: str, *, min_tokens: int = _MIN_TOKENS) -> list[str]:
    """The asks of ``query`` in order; a single-ask query gives ``[query]`` (stripped)."""
    text = query.strip()
    parts = [p.strip() for p in _BOUNDARY.split(text) if p and p.strip()]
    segments: list[str] = []
    for part in parts:
        if segments and len(analyse(part)) < min_tokens:
            segments[-1] = f"{segments[-1]} {part}"
        else:
            segments.append(part)
    if len(segments) > MAX_SEGMENTS:
        segments = [*segments[: MAX_SEGMENTS - 1], " ".join(segments[MAX_SEGMENTS - 1 :])]
    if len(segments) > 1 and len(analyse(segments[0])) < min_tokens:
        segments[1] = f"{segments[0]} {segments[1]}"
        segments = segments[1:]
    return segments or [text]


def query_texts(query: str) -> list[str]:
    """What to embed for a query: the whole query, then each segment if there are several.

    Pass ``encoder.encode(query_texts(q))`` as ``query_vec`` to ``route`` (row 0 is the whole
    query). A single row also works; segments then share the whole-query embedding. A long
    query is read through ``window.step_window``: row 0 is that window.
    """
    text = step_window(query)
    segments = query_segments(text)
    return [text] if len(segments) < 2 else [text, *segments]
