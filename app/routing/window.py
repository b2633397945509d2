"""Which part of a long step the router reads.

An agent may send more than the step: its whole conversation (the step last), or the step
followed by a pasted document. A step of up to ``STEP_WHOLE`` characters is read whole: every
query of both benchmarks is (the longest, a Seal-Tools task of several asks, has 1,290). A
longer one is read as its first ``STEP_HEAD`` and its last ``STEP_TAIL`` characters, cut at
whitespace, on two lines (two asks). Those sizes were chosen by ``bench/quality/long_steps.py``:
benchmark queries made the last turn of a ~5,900-character conversation, or followed by a
pasted document, routed through heads, tails and heads with tails of 500 to 2,000 characters;
every window that held more than a turn or two of the conversation lost nearly every route
(docs/ROUTING.md, "Long steps").

The same window feeds every stage and the embedding (``segment.query_texts`` and
``signals.analyse_query`` both take it), so a step of any length costs a bounded amount of
work.
"""

from __future__ import annotations

STEP_WHOLE = 2000  # a step up to this many characters is read whole
STEP_HEAD = 125  # of a longer step: the first characters read …
STEP_TAIL = 375  # … and the last ones (where a pasted conversation's step is)
_ALIGN = 20  # a cut moves at most this far to fall on whitespace


def window_bounds(step: str) -> tuple[int, int] | None:
    """(characters read from the start, from the end) of a step longer than ``STEP_WHOLE``;
    ``None`` when it is read whole."""
    if len(step) <= STEP_WHOLE:
        return None
    head = _head_end(step, STEP_HEAD)
    tail = len(step) - _tail_start(step, len(step) - STEP_TAIL)
    return head, tail


def step_window(step: str) -> str:
    """The part of ``step`` the router reads: all of it, or its head and its tail."""
    bounds = window_bounds(step)
    if bounds is None:
        return step
    head, tail = bounds
    return f"{step[:head]}\n…\n{step[len(step) - tail :]}"


def _head_end(step: str, at: int) -> int:
    """``at``, moved back to the whitespace before a word it would cut."""
    if step[at].isspace() or step[at - 1].isspace():
        return at
    space = max(step.rfind(" ", at - _ALIGN, at), step.rfind("\n", at - _ALIGN, at))
    return space if space > 0 else at


def _tail_start(step: str, at: int) -> int:
    """``at``, moved forward past the word it would cut."""
    if step[at].isspace() or step[at - 1].isspace():
        return at
    found = [
        i for i in (step.find(" ", at, at + _ALIGN), step.find("\n", at, at + _ALIGN)) if i >= 0
    ]
    return min(found) + 1 if found else at
