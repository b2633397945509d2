"""A forwarded call that did not give the tool's result, as the gateway words it."""

from __future__ import annotations

from typing import Any

from app.gateway.schemas import CallError
from app.sources.causes import Unreached
from app.sources.outbound import ResponseTooLarge
from registry.card import ToolCard

# The gateway's own codes: what an agent should do next (a card's own table comes first).
SUGGESTIONS = {
    "unknown_tool": "Use one of the names in did_you_mean, or route the step again.",
    "invalid_arguments": "Correct the arguments as each problem says, then call again.",
    "not_callable": "This tool has no source the gateway can reach: call it yourself.",
    "timeout": "The source did not answer in time; retry later if the call is safe to repeat.",
    "circuit_open": "The source is failing; wait before calling it again, or use another tool.",
    "overloaded": "Too many calls to this source at once; retry in a moment.",
    "unreachable": "The source cannot be reached now; retry later or use another tool.",
    "outbound_refused": "The outbound rules forbid this destination; tell the operator.",
    "redirect_refused": "The source redirected elsewhere, which is refused; tell the operator.",
    "response_too_large": "The answer was too large; ask for less (filters, a smaller page).",
    "response_too_deep": "The answer was nested too deeply to pass on; tell the operator.",
    "secret_withheld": "The answer held the source's credentials: withheld; tell the operator.",
    "protocol_error": "The source answered malformed data; retry later or tell the operator.",
    "credentials_missing": "The source's credentials are not configured; tell the operator.",
    "tool_error": "The tool reported an error: read the message, fix the call or try another.",
    "loop_refused": "The call came through this gateway already; it would loop.",
    "internal": "The gateway failed on this call (it has been logged); tell the operator.",
}
MESSAGE_CHARS = 2000  # of a failure's message, cut after the secrets are masked
# The most levels of objects and lists an answer may nest: real APIs nest a few dozen at
# most, and past about 250 the answer's own JSON cannot be written (pydantic's bound).
MAX_DEPTH = 100
# An answer larger than this is read, checked and masked on a worker thread, not on the
# event loop that serves every other request (masking looks into every blob it holds).
INLINE_BYTES = 64 * 1024


class CallFailed(Exception):
    """``code``: the upstream's (an HTTP status, ``tool_error``) or the gateway's own;
    ``retryable``: the same call may succeed later. For the source's circuit breaker:
    ``source_fault``, it says the source is unwell (counted); ``answered``, the source
    answered (it is up: the breaker closes); neither, the call says nothing of the source
    (never sent, or the caller's own deadline)."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        retryable: bool = False,
        source_fault: bool = False,
        answered: bool = False,
        details: Any = None,
        suggestion: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable
        self.source_fault = source_fault
        self.answered = answered
        self.details = details
        self.suggestion = suggestion
        self.attempts = 0  # requests sent upstream before it failed


def deeper_than(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether JSON ``value`` nests more than ``limit`` objects and lists, one in another
    (walked without recursion: the value may be deeper than Python's stack)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if level >= limit:
            return True
        stack.extend((child, level + 1) for child in children)
    return False


def too_deep(what: str) -> CallFailed:
    """An answer nested deeper than ``MAX_DEPTH``: the source answered (it is up), but the
    gateway does not pass it on."""
    return CallFailed(
        "response_too_deep",
        f"{what} is nested more than {MAX_DEPTH} levels deep (objects and lists); "
        f"the gateway passes on at most {MAX_DEPTH}",
        answered=True,
    )


def unreachable(found: Unreached, who: str = "the source") -> CallFailed:
    """A failure to reach the source, worded by its cause (app/sources/causes.py):
    ``timeout`` for time that ran out, else ``unreachable``; ``details.cause`` names it.
    It counts against the source; it may be retried unless it is TLS (an operator's)."""
    if found.cause == "timeout":
        code, message = "timeout", f"{who} did not answer in time: {found.reason}"
    else:
        code, message = "unreachable", f"{who} cannot be reached: {found.reason}"
    return CallFailed(
        code,
        message,
        retryable=found.retryable,
        source_fault=True,
        details={"cause": found.cause},
        suggestion=None if found.retryable else TLS_SUGGESTION,
    )


TLS_SUGGESTION = "The source's TLS is refused (its certificate?); tell the operator."


def withheld() -> CallFailed:
    """An answer that holds the source's credentials in a form that cannot be masked in
    place (app/sources/masking.py): the source answered, the gateway does not pass it on."""
    return CallFailed(
        "secret_withheld",
        "the source's answer holds the source's own credentials cut across its strings, "
        "which cannot be masked in place; the answer is withheld",
        answered=True,
    )


def reason(exc: BaseException) -> str:
    """An exception in a line (the first of a group's): its type and its text, whole (the
    gateway masks the secrets out of a message before it cuts it to size)."""
    nested = getattr(exc, "exceptions", None)
    if nested:
        return reason(nested[0])
    return f"{type(exc).__name__}: {exc}".rstrip(": ")


def too_large(exc: BaseException) -> bool:
    if isinstance(exc, ResponseTooLarge):
        return True
    return any(too_large(e) for e in getattr(exc, "exceptions", ()))


def error_of(failure: CallFailed, card: ToolCard | None) -> CallError:
    """The structured error, with the card's suggestion for its code when it has one
    (an exact code, then its class: "404", then "4XX")."""
    suggestion = failure.suggestion
    if card is not None:
        entries = {e.code.upper(): e for e in card.errors}
        entry = entries.get(failure.code.upper()) or entries.get(failure.code[:1] + "XX")
        if entry is not None and entry.suggestion:
            suggestion = entry.suggestion
    return CallError(
        code=failure.code,
        message=failure.message,
        retryable=failure.retryable,
        suggestion=suggestion or SUGGESTIONS.get(failure.code),
        details=failure.details,
    )
