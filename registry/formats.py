"""Tool formats agents already use: OpenAI function tools (Chat Completions and the flat
Responses form), Anthropic tools, MCP tools (with their title, annotations and output schema).

``to_card_data`` turns any of them (or a native card) into the data of a ``ToolCard``;
``from_card`` turns a card back into one of them, ready to paste into a model request.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from registry.card import ToolCard

FORMATS = ("openai", "openai_responses", "anthropic", "mcp")
Format = Literal["native", "openai", "anthropic", "mcp"]

_NATIVE_FIELDS = frozenset(ToolCard.model_fields)
_EXPECTED = (
    "expected a native card {name, description, parameters?, ...}, "
    "an OpenAI function tool {type: 'function', function: {name, description, parameters}} "
    "(or the flat Responses form {type: 'function', name, description, parameters}), "
    "an Anthropic tool {name, description, input_schema} "
    "or an MCP tool {name, description?, inputSchema, outputSchema?}"
)


def json_kind(value: Any) -> str:
    """The JSON name of a value's type, for messages ("an array", not "list")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return "a string" if isinstance(value, str) else "a value"


class FormatError(ValueError):
    """A tool in no format we know, or in more than one."""


def detect_format(item: Mapping[str, Any]) -> Format:
    """Which format ``item`` is in; FormatError if it is unknown or ambiguous."""
    if not isinstance(item, Mapping):
        raise FormatError(f"a tool must be a JSON object, not {json_kind(item)}; {_EXPECTED}")
    found = _markers(item)
    if len(found) > 1:
        signs = " and ".join(sign for _, sign in found)
        raise FormatError(f"ambiguous tool: it has {signs}; {_EXPECTED}")
    if found:
        return found[0][0]
    if "name" in item and set(item) <= _NATIVE_FIELDS:
        return "native"
    raise FormatError(f"unrecognised tool with keys {sorted(map(str, item))}; {_EXPECTED}")


def _markers(item: Mapping[str, Any]) -> list[tuple[Format, str]]:
    """The signs of each format that ``item`` shows."""
    found: list[tuple[Format, str]] = []
    if item.get("type") == "function":
        found.append(("openai", "type 'function' (OpenAI)"))
    if "input_schema" in item:
        found.append(("anthropic", "'input_schema' (Anthropic)"))
    if "inputSchema" in item:
        found.append(("mcp", "'inputSchema' (MCP)"))
    if "parameters" in item and item.get("type") != "function":
        found.append(("native", "'parameters' (native)"))
    return found


def to_card_data(item: Mapping[str, Any], *, namespace: str | None) -> dict[str, Any]:
    """Data for ``ToolCard.model_validate``; ``namespace`` applies when the item names none."""
    data = _IMPORTERS[detect_format(item)](item)
    if namespace is not None and data.get("namespace") is None:
        data["namespace"] = namespace
    return data


def _present(**fields: Any) -> dict[str, Any]:
    """The fields that are set, deep-copied so the card shares nothing with the input."""
    return {key: copy.deepcopy(value) for key, value in fields.items() if value is not None}


def _from_native(item: Mapping[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(dict(item))


def _from_openai(item: Mapping[str, Any]) -> dict[str, Any]:
    function = item.get("function", item)  # Chat Completions nests it; Responses is flat
    if not isinstance(function, Mapping):
        raise FormatError("an OpenAI tool's 'function' must be an object {name, description, ...}")
    return _present(
        name=function.get("name"),
        description=function.get("description"),
        parameters=function.get("parameters"),
    )


def _from_anthropic(item: Mapping[str, Any]) -> dict[str, Any]:
    return _present(
        name=item.get("name"),
        description=item.get("description"),
        parameters=item.get("input_schema"),
    )


def _from_mcp(item: Mapping[str, Any]) -> dict[str, Any]:
    annotations = item.get("annotations")
    title = item.get("title")
    if title is None and isinstance(annotations, Mapping):
        title = annotations.get("title")
    return _present(
        name=item.get("name"),
        summary=title,
        title=item.get("title"),
        description=item.get("description") or title,  # MCP's description is optional
        parameters=item.get("inputSchema"),
        returns=item.get("outputSchema"),
        annotations=annotations,
    )


_IMPORTERS: dict[Format, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "native": _from_native,
    "openai": _from_openai,
    "anthropic": _from_anthropic,
    "mcp": _from_mcp,
}


# The tool names each format's consumers accept: OpenAI function names and Anthropic tool
# names ^[a-zA-Z0-9_-]{1,64}$ (Anthropic documents 128; 64 is what both accept), MCP
# (2025-11-25) letters, digits, '_', '-' and '.', 1-128. A card name may also hold ':'.
_NAME_RULES = {
    "openai": (re.compile(r"[^A-Za-z0-9_-]"), 64),
    "openai_responses": (re.compile(r"[^A-Za-z0-9_-]"), 64),
    "anthropic": (re.compile(r"[^A-Za-z0-9_-]"), 64),
    "mcp": (re.compile(r"[^A-Za-z0-9_.-]"), 128),
}
_NAME_HASH = 8  # hex digits of the card name's sha256 that keep two exported names apart


def exported_name(name: str, fmt: str) -> str:
    """``name`` as tools in ``fmt`` may be named: itself when it already fits; otherwise each
    character the format refuses becomes '_', cut to fit, and '_' plus 8 hex digits of the
    name's sha256 are added, so 'billing:refund.v2' and 'billing_refund_v2' stay apart.
    ``/v1/validate`` and ``/v1/feedback`` accept either name (app/tools/live_index.py)."""
    refused, longest = _NAME_RULES[fmt]
    if len(name) <= longest and not refused.search(name):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:_NAME_HASH]
    return f"{refused.sub('_', name)[: longest - _NAME_HASH - 1]}_{digest}"


_EXPORTED = re.compile(rf"_[0-9a-f]{{{_NAME_HASH}}}")


def could_be_exported(name: str) -> bool:
    """Whether ``name`` has the ending ``exported_name`` gives a name it changed."""
    return _EXPORTED.search(name[-_NAME_HASH - 1 :]) is not None


def from_card(card: ToolCard, fmt: str) -> dict[str, Any]:
    """The card as a tool definition in ``fmt`` (one of FORMATS); ValueError otherwise."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown tool format {fmt!r}; expected one of {', '.join(FORMATS)}")
    parameters = copy.deepcopy(card.parameters)
    name = exported_name(card.name, fmt)
    if fmt == "openai":
        function = {"name": name, "description": card.description, "parameters": parameters}
        return {"type": "function", "function": function}
    if fmt == "openai_responses":
        # strict false: strict mode needs every property required and no other properties,
        # which few cards' schemas say; the Responses API takes strict as true when absent.
        return {
            "type": "function",
            "name": name,
            "description": card.description,
            "parameters": parameters,
            "strict": False,
        }
    if fmt == "anthropic":
        return {"name": name, "description": card.description, "input_schema": parameters}
    return _to_mcp(card, name, parameters)


def _to_mcp(card: ToolCard, name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """An MCP ``Tool``: its title and annotations when the card has them."""
    tool: dict[str, Any] = {"name": name}
    if card.title is not None:
        tool["title"] = card.title
    tool["description"] = card.description
    tool["inputSchema"] = parameters
    if card.returns is not None and card.returns.get("type") == "object":
        tool["outputSchema"] = copy.deepcopy(card.returns)  # MCP requires an object schema here
    if card.annotations is not None:
        tool["annotations"] = card.annotations.model_dump(exclude_none=True)
    return tool
