"""Text that a database can hold: no NUL character (U+0000) anywhere in a request.

PostgreSQL's text and JSON columns refuse U+0000 (SQLite stores it), so a card, a route query
or a report holding one would fail only when written — a 500, or a route event that blocks
the writer's batch. Requests are therefore refused up front, with where the character was.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, model_validator
from pydantic_core import PydanticCustomError

NUL = "\x00"


def nul_path(value: Any, path: str = "") -> str | None:
    """The JSON pointer of the first string or key holding U+0000 in ``value``, else None."""
    if isinstance(value, str):
        return path if NUL in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and NUL in key:
                return f"{path}/{key!r}"
            found = nul_path(item, f"{path}/{key}")
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = nul_path(item, f"{path}/{i}")
            if found is not None:
                return found
    return None


class NoNul(BaseModel):
    """A model whose input may not hold U+0000 in any string or key, however deeply nested."""

    @model_validator(mode="before")
    @classmethod
    def _no_nul(cls, data: Any) -> Any:
        where = nul_path(data)
        if where is not None:
            raise PydanticCustomError(
                "nul_character",
                "text may not contain the NUL character (U+0000): at {where}",
                {"where": where or "/"},
            )
        return data
