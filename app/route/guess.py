"""A tool name no tool has, routed as a step (issue 42 item 2).

A model that invents ``send_sms`` in a catalog whose tool is ``CreateMessage`` means a tool
by what it does, not by how it is spelt: no letters are close, so the names alone suggest
nothing. Its words ("send sms") and the names of the arguments it passed ("to", "body")
are a step like any other, and the router finds the tools that fit it. The guess is ranked
as a route is, and recorded as none: it is no step of the agent's task.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from app.loop.validation import Guess
from app.route.deps import RouteDeps
from app.route.service import EmbeddedStep, rank_step, step_texts
from app.routing.text import words
from app.schemas import RouteRequest

GUESSES = 3  # tools suggested at most
# A suggestion must be a plausible fit on its own, not merely the best of a poor lot: a
# calibrated confidence of 0.1 or more (about one in ten such tools is the one meant), and a
# cosine of 0.3 or more between the name's words and the card (the default encoder's
# unrelated texts stay under 0.2: "get weather (city)" and a recording's card, 0.08, at a
# confidence of 0.71 among 5 tools). Below either, nothing the name's words describe is
# here, and a guess would only mislead.
MIN_CONFIDENCE = 0.1
MIN_COSINE = 0.3
MAX_ARGUMENTS = 16  # argument names read, at most (a call may pass any number)
MAX_WORDS = 64  # words of the step, at most


def guess_step(name: str, arguments: Iterable[str]) -> str:
    """The invented name's words, then the argument names': ``send_sms`` called with
    ``{"to": …, "body": …}`` is "send sms (to, body)"."""
    said = words(name)[:MAX_WORDS]
    passed = [" ".join(words(a)) for a in list(arguments)[:MAX_ARGUMENTS]]
    passed = [p for p in passed if p]
    if not said and not passed:
        return ""
    return " ".join(said) + (f" ({', '.join(passed)})" if passed else "")


def guess_tools(deps: RouteDeps, namespace: str, name: str, arguments: Sequence[str]) -> Guess:
    """Route the invented name as a step of ``namespace`` (unrecorded, ranked as for a
    caller with no reports of its own) and keep the tools with ``MIN_CONFIDENCE`` or more
    (an ``app.loop.validation.Guesser`` once ``deps`` is bound)."""
    step = guess_step(name, arguments)
    if not step:
        return Guess([], None)
    request = RouteRequest(query=step, namespace=namespace, k=GUESSES, split=False)
    texts = step_texts(request, deps.index)
    if not texts:
        return Guess([], None)
    vectors = np.asarray(deps.encoder.encode(texts), dtype=np.float32)
    found = rank_step(request, deps, EmbeddedStep(texts, vectors, 0.0))
    fits = [
        c
        for c in found.candidates
        if c.confidence >= MIN_CONFIDENCE and c.evidence.cosine >= MIN_COSINE
    ]
    if not fits:
        return Guess([], None)
    listed = ", ".join(f"{c.name} (confidence {c.confidence:.2f})" for c in fits)
    reason = (
        f"no tool's name is close to {name!r}; routed as the step {step!r}, "
        f"the tools that fit it are {listed}"
    )
    return Guess([c.name for c in fits], reason)
