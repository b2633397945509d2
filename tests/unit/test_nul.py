"""registry/nul.py: where a NUL character sits in a JSON value."""

from __future__ import annotations

from registry.nul import nul_path


def test_nul_path_names_the_first_string_or_key_holding_one() -> None:
    assert nul_path({"a": ["ok", {"b": "x\x00"}]}) == "/a/1/b"
    assert nul_path({"k\x00": 1}) == "/'k\\x00'"
    assert nul_path("\x00") == ""
    assert nul_path({"a": ["ok", 1, None, 2.5, {"b": "\\u0000 as text"}]}) is None
