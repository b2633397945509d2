"""The streamed token estimate equals the rule it states: ceil(chars / 4) of the compact JSON."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from app.route.answer import estimate_tokens

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
    {"name": "天气预报", "description": "查询城市天气", "input_schema": {"type": "object"}},
    {"name": "x", "description": 'quotes " and \\ backslashes', "tags": []},
]


@pytest.mark.parametrize("count", [0, 1, 2, 3])
def test_streamed_estimate_equals_the_whole_list(count: int) -> None:
    tools = TOOLS[:count]
    text = json.dumps(tools, ensure_ascii=False, separators=(",", ":"))
    assert estimate_tokens(iter(tools)) == math.ceil(len(text) / 4)
