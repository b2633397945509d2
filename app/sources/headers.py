"""What HTTP lets a header value hold: visible ASCII, spaces and tabs (RFC 9110, 5.5); no
line break, no other control character, nothing outside ASCII. A value outside it is refused
before anything is sent: httpx raises on it (a line break, a non-ASCII character) after the
request was counted as sent, and a line break that got through would be a second header.

The reason never quotes the value: it may be a secret."""

from __future__ import annotations

import re

_ALLOWED = re.compile(r"[\t\x20-\x7e]*")
_BAD = re.compile(r"[^\t\x20-\x7e]")


def header_problem(value: str) -> str | None:
    """Why ``value`` cannot be sent as a header value, or None if it can."""
    if _ALLOWED.fullmatch(value):
        return None
    found = _BAD.search(value)
    bad = found.group() if found else ""
    if bad in ("\r", "\n"):
        return "it holds a line break"
    if bad < " " or bad == "\x7f":
        return "it holds a control character"
    return "it holds a character outside ASCII"
