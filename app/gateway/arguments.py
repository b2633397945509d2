"""What a call's argument may hold where its operation puts it (docs/SOURCES.md, "What an
argument may hold"). Every refusal is the caller's ``invalid_arguments``, naming the
argument; nothing is sent, and the source's breaker never hears of it.

- A **path** argument is exactly one path segment: its text is percent-encoded whole (``/``,
  ``\\``, ``?``, ``#`` and ``%`` too, so an encoded form such as ``%2e%2e`` stays the literal
  text it is), and it may not be empty, ``.`` or ``..``: those would name the operation's
  folder or the one above it, where the source's credentials would go too.
- A **header** argument holds what HTTP lets a header hold (app/sources/headers.py), at most
  ``MAX_HEADER_BYTES``; a **cookie** argument is percent-encoded, and the ``Cookie`` header
  they make is held to the same bound.
- The **URL** as sent (path and query) is at most ``MAX_URL_BYTES``: a longer one is refused
  by httpx, or by the upstream closing the connection, which would look like its own failure.
"""

from __future__ import annotations

from urllib.parse import quote

from app.gateway.failures import CallFailed
from app.sources.headers import header_problem
from registry.json_schema import json_pointer

MAX_URL_BYTES = 8192
MAX_HEADER_BYTES = 8192
NOT_A_SEGMENT = frozenset({"", ".", ".."})


def refused(argument: str, problem: str, suggestion: str) -> CallFailed:
    return CallFailed(
        "invalid_arguments",
        f"argument {argument!r}: {problem}",
        details=[{"path": json_pointer([argument]), "message": problem, "suggestion": suggestion}],
    )


def path_segment(argument: str, text: str) -> str:
    """``text`` as one path segment, percent-encoded whole."""
    if text in NOT_A_SEGMENT:
        shown = "empty" if not text else repr(text)
        raise refused(
            argument,
            f"a path argument is one path segment; {shown} is not one",
            "give the identifier itself (not empty, '.' or '..')",
        )
    return quote(text, safe="")


def header_value(argument: str, text: str) -> str:
    problem = header_problem(text)
    if problem is not None:
        raise refused(
            argument,
            f"a header argument holds printable ASCII only; {problem}",
            "remove line breaks and control characters; encode other characters first",
        )
    return bounded_header(argument, text)


def bounded_header(argument: str, text: str) -> str:
    if len(text) > MAX_HEADER_BYTES:
        raise refused(
            argument,
            f"a header may hold at most {MAX_HEADER_BYTES} bytes; this one has {len(text)}",
            "send less (a shorter value)",
        )
    return text


def bounded_url(length: int, sizes: dict[str, int]) -> None:
    """Refuse a URL longer than the bound, naming its longest argument (``sizes``: each
    path and query argument's encoded length)."""
    if length <= MAX_URL_BYTES or not sizes:
        return
    longest = max(sizes, key=lambda name: sizes[name])
    raise refused(
        longest,
        f"the request's URL would be {length} bytes, over the {MAX_URL_BYTES} a source is "
        f"sent; this argument is {sizes[longest]} of them",
        "send less (a shorter value, fewer items)",
    )
