"""Reading a UTF-8 JSON Lines file, with the file and line of the first bad line."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# JSON Lines ends lines with \n (or \r\n). str.splitlines() also splits on U+2028, U+2029,
# U+0085 and \x1c-\x1e, which JSON allows raw inside strings (text scraped from the web
# holds them): a line would be cut in the middle of a description.
_LINE_END = re.compile(r"\r\n|\r|\n")


class JsonlError(ValueError):
    """An unreadable file or line; the message starts with ``path`` or ``path:line``."""


def read_text(path: Path) -> str:
    """The file as UTF-8 text (a leading byte-order mark is no error)."""
    try:
        return path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise JsonlError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise JsonlError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def read_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each non-blank line of ``path``."""
    for number, line in enumerate(_LINE_END.split(read_text(path)), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise JsonlError(f"{path}:{number}: not valid JSON: {exc.msg}") from None
