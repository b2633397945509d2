"""Which parameter of which tool a value of the step fits: the card's own evidence about ids.

A card says what its parameters take: a ``pattern`` (Twilio's ``^CH[0-9a-fA-F]{32}$``), a
``format`` (``email``, ``uri``, ``date-time``), a name (``assistant_id``, ``file_path``).
Real descriptions often put the pattern of an id only on the resource it names, in what the
operation returns (``sid`` of a conversation; ``conversation_sid`` of a message), not on the
parameter that takes it; such a pattern is read from the card's ``returns`` by the parameter's
name. Every parameter of a tool, required or not, is one :class:`Slot`, compiled when the
index is built.

A value fits a slot (``fit``, 0 to 1) by, strongest first:

* the slot's pattern, its own or that of the id of the same name some card of the namespace
  returns (checked by the index's ``value_check``, the service's JSON Schema validator: RE2,
  never a backtracking engine);
* its prefix, which abbreviates a word of the slot's name (``asst_…`` → ``assistant_id``,
  ``vs_…`` → ``vector_store_id``, ``proj_…`` → ``project_id``);
* the noun the step puts before it, a word of the slot's name (``file 12345`` → ``file_id``);
* its shape, the slot's kind (an e-mail address for an ``email`` parameter, a path for a
  ``path``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.routing.actions import OperationAction, name_stems, operation_action
from app.routing.reading import Value
from app.routing.text import schema_properties, stems, words
from app.routing.types import ToolDoc
from app.routing.values import ValueCheck, value_kind

# Parameter names that are the resource's own id: their pattern is the returned object's id's.
OWN_ID = frozenset({"id", "sid", "uid", "uuid", "key"})
_ID_WORDS = frozenset({"id", "ids", "sid", "sids", "uid", "uuid", "key", "no", "number"})
_SEARCH_DEPTH = 4  # levels of ``returns`` read for patterns (a list's items, their objects)
# What a value's shape says of a slot's kind: the strength of the fit.
KIND_FIT: dict[str, dict[str, float]] = {
    "email": {"email": 0.6},
    "url": {"url": 0.6},
    "phone": {"phone": 0.6},
    "datetime": {"datetime": 0.5, "date": 0.5},
    "path": {"path": 0.5},
    "slashed": {"repo": 0.5, "path": 0.3},
    "id": {"id": 0.2},
    "number": {"id": 0.2, "number": 0.1},
}
_PATH_WORDS = frozenset(
    {
        "path",
        "paths",
        "file",
        "files",
        "directory",
        "dir",
        "folder",
        "source",
        "destination",
        "filename",
    }
)
_REPO_WORDS = frozenset({"repo", "repository", "owner", "branch", "head", "base", "ref"})
_PREFIX = re.compile(r"^([A-Za-z]{2,10})[_:-](?=[A-Za-z0-9])")


@dataclass(frozen=True, slots=True)
class Slot:
    """One parameter of a tool, as values are fitted to it."""

    name: str
    words: tuple[str, ...]  # its name's words, lower-case, the id words left out
    stems: frozenset[str]  # their stems
    kind: str  # values.value_kind, or "path" / "repo" by name
    pattern: str | None  # its own pattern, as a JSON Schema (compact)
    key: str  # what it is called among the ids the namespace's cards return (``id_key``)
    required: bool


def id_key(name: str, resource: str = "") -> str:
    """An id's name as every card of a namespace spells it: its words' stems, joined
    (``ConversationSid``, ``conversation_sid`` → ``convers sid``); a resource's own id
    (``sid``, ``id``) is prefixed with the resource's stem."""
    stemmed = stems_in_order(name)
    if resource and len(stemmed) == 1 and stemmed[0] in OWN_ID:
        stemmed = [resource, *stemmed]
    return " ".join(stemmed)


def stems_in_order(text: str) -> list[str]:
    return [s for w in words(text) for s in stems(w)]


def returned_ids(returns: Mapping[str, Any] | None, resource: str) -> dict[str, str]:
    """``id_key`` → ``pattern`` of every patterned property of what an operation returns:
    its objects' own ids keyed by the resource they are (the operation's, or the list
    property's that holds them), the shallowest first."""
    found: dict[str, str] = {}
    if isinstance(returns, Mapping):
        _collect(returns, resource, found, 0)
    return found


def _collect(node: Mapping[str, Any], resource: str, found: dict[str, str], depth: int) -> None:
    if depth > _SEARCH_DEPTH:
        return
    props = schema_properties(node)
    for name, schema in props.items():
        if isinstance(schema.get("pattern"), str):
            found.setdefault(id_key(name, resource), json.dumps({"pattern": schema["pattern"]}))
    for name, schema in props.items():
        inner = schema.get("items") if isinstance(schema.get("items"), Mapping) else schema
        if isinstance(inner, Mapping) and isinstance(inner.get("properties"), Mapping):
            held = stems_in_order(name)
            _collect(inner, held[-1] if held else resource, found, depth + 1)
    items = node.get("items")
    if isinstance(items, Mapping):
        _collect(items, resource, found, depth + 1)


def _kind(name: str, schema: Mapping[str, Any], name_words: Sequence[str]) -> str:
    kind = value_kind(name, schema)
    if kind in ("string", "id") and _PATH_WORDS & set(name_words):
        return "path"
    if kind in ("string", "id") and _REPO_WORDS & set(name_words):
        return "repo"
    return kind


def compile_slots(parameters: Mapping[str, Any] | None, resource: str = "") -> tuple[Slot, ...]:
    """Every parameter of a card as a slot (done once, at build time); ``resource``: the
    stem of what the operation acts on (``actions.py``), which its own ``id`` names."""
    props = schema_properties(parameters)
    required = set((parameters or {}).get("required") or [])
    slots = []
    for name, schema in props.items():
        all_words = words(name)
        own = schema.get("pattern")
        named = tuple(w for w in all_words if w not in _ID_WORDS)
        slots.append(
            Slot(
                name=name,
                words=named,
                stems=stems(" ".join(named)),
                kind=_kind(name, schema, all_words),
                pattern=json.dumps({"pattern": own}) if isinstance(own, str) else None,
                key=id_key(name, resource),
                required=name in required,
            )
        )
    return tuple(slots)


def abbreviates(prefix: str, word: str) -> bool:
    """Whether ``prefix`` (2+ letters) is ``word`` shortened: its first letter, then the rest
    in order (``asst`` → ``assistant``, ``msg`` → ``message``, ``proj`` → ``project``)."""
    if len(prefix) < 2 or not word or prefix[0] != word[0]:
        return False
    rest = iter(word[1:])
    return all(letter in rest for letter in prefix[1:])


def _prefix_fits(prefix: str, slot: Slot) -> bool:
    if any(abbreviates(prefix, w) for w in slot.words):
        return True
    initials = "".join(w[0] for w in slot.words if w)
    return len(initials) >= 2 and prefix == initials


Checker = Callable[[str, str], bool]


def fit(value: Value, slot: Slot, matches: Checker, ids: Mapping[str, str]) -> float:
    """How well ``value`` fits ``slot``: 0 (not at all) to 1 (its pattern takes it). ``ids``:
    the patterns of the ids the namespace's cards return, by ``id_key``."""
    pattern = slot.pattern or ids.get(slot.key)
    if pattern is not None and value.shape in ("id", "number") and matches(pattern, value.text):
        return 1.0
    best = KIND_FIT.get(value.shape, {}).get(slot.kind, 0.0)
    found = _PREFIX.match(value.text)
    if found and value.shape == "id" and _prefix_fits(found.group(1).lower(), slot):
        best = max(best, 0.8)
    if value.noun and (value.noun in slot.words or stems(value.noun) & slot.stems):
        best = max(best, 0.6)
    return best


def pattern_checker(check: ValueCheck | None) -> Checker:
    """``matches(pattern_schema, value)``, each pair checked once per step (``None``: no
    checker, so no pattern is read)."""
    seen: dict[tuple[str, str], bool] = {}

    def matches(schema: str, value: str) -> bool:
        if check is None:
            return False
        key = (schema, value)
        if key not in seen:
            seen[key] = check(schema, value) is None
        return seen[key]

    return matches


@dataclass(frozen=True, slots=True)
class ToolProfile:
    """What the values and action evidence read of one card, compiled at build time: its
    parameters as slots, what its operation does, and the patterns of the ids it returns
    (``returned_ids``: the namespace's index gathers them for every card's slots)."""

    slots: tuple[Slot, ...]
    action: OperationAction
    returned: tuple[tuple[str, str], ...] = ()
    named: frozenset[str] = frozenset()  # the stems of its name, no id word (``name_stems``)


def compile_profile(doc: ToolDoc) -> ToolProfile:
    action = operation_action(doc.name, doc.operation, doc.annotations)
    returned = returned_ids(doc.returns, action.resource)
    return ToolProfile(
        compile_slots(doc.parameters, action.resource),
        action,
        tuple(returned.items()),
        name_stems(doc.name),
    )


def gathered_ids(profiles: Iterable[ToolProfile]) -> dict[str, str]:
    """``id_key`` → pattern over every card of a namespace (the first card's that names one)."""
    found: dict[str, str] = {}
    for profile in profiles:
        for key, pattern in profile.returned:
            found.setdefault(key, pattern)
    return found


def unsupplied_ids(
    profile: ToolProfile,
    ids: Mapping[str, str],
    values: Sequence[Value],
    matches: Checker,
    supplied: Iterable[str],
) -> frozenset[str]:
    """Of the ``supplied`` required parameters (the rule check found a value for them), those
    whose id pattern, read from what the namespace's cards return, no id of the step takes:
    an id of another resource is not their value (``CH…`` for a ``UserSid`` of ``^US…``)."""
    named = set(supplied)
    ids_found = [v.text for v in values if v.shape in ("id", "number")]
    out = set()
    for slot in profile.slots:
        if not slot.required or slot.name not in named or slot.pattern is not None:
            continue
        pattern = ids.get(slot.key)
        if pattern is not None and not any(matches(pattern, text) for text in ids_found):
            out.add(slot.name)
    return frozenset(out)
