"""JSON Schema checks that a hostile tool card cannot stall, and validators that run on RE2.

A card's ``parameters`` and ``returns`` are untrusted JSON Schema. ``check_schema`` refuses a
schema before it is stored when checking it, or validating a call against it, could take
unbounded time or memory; the bounds are the ``MAX_*`` constants below. ``make_validator``
builds a jsonschema validator whose regular expressions run on RE2, which matches in linear
time: Python's backtracking ``re`` takes seconds on ``^(a+)+$`` against 26 characters.

The check against the dialect's metaschema runs on ``jsonschema-rs`` (Rust), with formats
not asserted, as the Python check here is called: ~0.01 ms per card's schema against
~1.4 ms for Python's ``jsonschema`` (``bench/perf/parse_bench.py``), which was most of the time
of parsing a bulk import (~17 s per 10,000 cards, holding the interpreter lock). A refused
schema is checked again by Python's ``jsonschema`` for its error message, so the messages
are the ones it has always given.
``tests/unit/test_schemas.py`` holds the two to the same verdict on a seeded fuzz.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import reprlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from datetime import date
from fractions import Fraction
from typing import Any
from urllib.parse import unquote

import jsonschema_rs
import re2
from jsonschema import (
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
    FormatChecker,
    ValidationError,
    _keywords,
)
from jsonschema.exceptions import SchemaError as MetaSchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import extend, validator_for

MAX_SCHEMA_BYTES = 64 * 1024  # the schema as compact UTF-8 JSON
MAX_JSON_DEPTH = 32  # nested objects and arrays; `properties` + a property take two levels
MAX_SUBSCHEMAS = 2_000  # subschemas in the document, $defs included
MAX_EXPANDED_SUBSCHEMAS = 10_000  # subschemas reachable from the root once each $ref is followed
MAX_EXPANDED_DEPTH = 64  # subschema nesting once each $ref is followed
MAX_ENUM_ENTRIES = 500  # entries of an `enum`, or of a `const` that is an array or object
RE2_MAX_MEM = 2 << 20  # memory of one compiled pattern; RE2 refuses bigger ("pattern too large")
MAX_PATTERN_PROGRAM = 200_000  # RE2 instructions of a schema's distinct patterns (~60 ms to build)
PATTERN_CACHE_SIZE = 128  # compiled patterns kept: at most RE2_MAX_MEM each
VALIDATOR_CACHE_SIZE = 1_024  # validators kept, by schema hash

SUPPORTED_DRAFTS = (
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
)
_DRAFT_URIS = frozenset(
    str(cls.META_SCHEMA.get("$id", cls.META_SCHEMA.get("id"))).rstrip("#")
    for cls in SUPPORTED_DRAFTS
)
# The same metaschemas compiled by jsonschema-rs: formats not asserted (as ``check_schema``
# calls Python's with ``format_checker=None``), and nothing fetched (its drafts are built in).
_FAST_META: dict[type, Any] = {
    cls: getattr(jsonschema_rs, cls.__name__)(cls.META_SCHEMA, validate_formats=False, offline=True)
    for cls in SUPPORTED_DRAFTS
}

# Where subschemas sit: one schema, a list of schemas, a map of name -> schema.
_ONE = (
    "additionalItems", "additionalProperties", "contains", "contentSchema", "else", "if",
    "items", "not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties",
)  # fmt: skip
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_MAP = ("dependentSchemas", "dependencies", "patternProperties", "properties")
_DEFS = ("$defs", "definitions")
# Keywords that apply to the instance itself, not to a part of it: a $ref cycle made only of
# these (and $ref) would apply the schema to the same value forever.
_IN_PLACE = frozenset(
    ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies")
)
MAX_REF_STEPS = 20_000  # $refs followed while one call is validated (a recursive schema's bound)


class SchemaError(ValueError):
    """A refused schema; ``pointer`` is the JSON Pointer of the offending node ("" = root)."""

    def __init__(self, pointer: str, reason: str) -> None:
        self.pointer = pointer
        self.reason = reason
        super().__init__(f"{reason} (at {pointer or 'the schema root'})")


def json_pointer(tokens: Iterable[str | int]) -> str:
    """RFC 6901 pointer for a path of keys and indexes."""
    return "".join(f"/{_escape(token)}" for token in tokens)


def _escape(token: str | int) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def check_schema(schema: Any, *, require_object: bool) -> None:
    """Raise SchemaError unless ``schema`` is a valid, bounded, self-contained JSON Schema."""
    if not isinstance(schema, dict):
        raise SchemaError("", f"a schema must be a JSON object, not {type(schema).__name__}")
    _check_size(schema)
    _check_depth(schema)
    cls = _dialect(schema)
    nodes = _collect_subschemas(schema)
    _check_metaschema(schema, cls)  # patterns are checked with RE2 below
    for pointer, node in nodes:
        _check_node(schema, pointer, node, cls)
    _check_patterns(nodes)
    _check_unevaluated(nodes)
    _Expansion(schema).visit(schema, "", 1)
    if require_object:
        _check_object(schema)


def _check_metaschema(schema: dict[str, Any], cls: Any) -> None:
    """Refuse a schema its dialect's metaschema refuses (formats not asserted)."""
    fast = _FAST_META[cls]
    if fast.is_valid(schema):
        return
    try:  # Python's jsonschema words the error, as it always has
        cls.check_schema(schema, format_checker=None)
    except MetaSchemaError as exc:
        pointer = json_pointer(exc.absolute_path)
        raise SchemaError(pointer, f"not valid JSON Schema: {exc.message}") from None
    try:  # the two disagree (no case known): refuse, in jsonschema-rs's words
        fast.validate(schema)
    except jsonschema_rs.ValidationError as exc:
        pointer = json_pointer(exc.instance_path)
        raise SchemaError(pointer, f"not valid JSON Schema: {exc.message}") from None
    raise SchemaError("", "not valid JSON Schema")


def _check_size(schema: dict[str, Any]) -> None:
    try:
        text = json.dumps(schema, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as exc:
        raise SchemaError("", f"the schema is not plain JSON: {exc}") from None
    size = len(text.encode())
    if size > MAX_SCHEMA_BYTES:
        raise SchemaError(
            "", f"the schema is {size} bytes as JSON; the limit is {MAX_SCHEMA_BYTES}"
        )


def _check_depth(schema: dict[str, Any]) -> None:
    stack: list[tuple[Any, str, int]] = [(schema, "", 1)]
    while stack:
        node, pointer, depth = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if depth > MAX_JSON_DEPTH:
            raise SchemaError(pointer, f"the schema nests deeper than {MAX_JSON_DEPTH} levels")
        items = node.items() if isinstance(node, dict) else enumerate(node)
        stack.extend((value, f"{pointer}/{_escape(key)}", depth + 1) for key, value in items)


def _dialect(schema: dict[str, Any]) -> Any:
    declared = schema.get("$schema")
    if declared is not None and (
        not isinstance(declared, str) or declared.rstrip("#") not in _DRAFT_URIS
    ):
        supported = ", ".join(sorted(_DRAFT_URIS))
        raise SchemaError("/$schema", f"unsupported $schema {declared!r}; supported: {supported}")
    return validator_for(schema, default=Draft202012Validator)


def _children(node: dict[str, Any], pointer: str, *, defs: bool) -> Iterator[tuple[str, Any]]:
    """The subschemas directly under ``node``, with their pointers (tolerates malformed input)."""
    for key in _ONE:
        if isinstance(node.get(key), dict | bool):
            yield f"{pointer}/{key}", node[key]
    for key in _MANY:
        if isinstance(value := node.get(key), list):
            yield from (
                (f"{pointer}/{key}/{i}", child)
                for i, child in enumerate(value)
                if isinstance(child, dict | bool)
            )
    for key in _MAP + _DEFS if defs else _MAP:
        if isinstance(value := node.get(key), dict):
            yield from (
                (f"{pointer}/{key}/{_escape(name)}", child)
                for name, child in value.items()
                if isinstance(child, dict | bool)
            )


def _collect_subschemas(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    count = 0
    stack: list[tuple[str, Any]] = [("", schema)]
    while stack:
        pointer, node = stack.pop()
        count += 1
        if count > MAX_SUBSCHEMAS:
            raise SchemaError("", f"the schema has more than {MAX_SUBSCHEMAS} subschemas")
        if isinstance(node, dict):
            found.append((pointer, node))
            stack.extend(_children(node, pointer, defs=True))
    return found


def _check_node(root: dict[str, Any], pointer: str, node: dict[str, Any], cls: Any) -> None:
    for key in ("$dynamicRef", "$recursiveRef"):
        if key in node:
            raise SchemaError(f"{pointer}/{key}", f"{key} is not supported; use a local $ref")
    if pointer and (cls.ID_OF(node) or "$schema" in node):
        raise SchemaError(pointer, "$id and $schema are only allowed at the schema root")
    if "$ref" in node:
        resolve_ref(root, node["$ref"], f"{pointer}/$ref")
    for key in ("enum", "const"):
        value = node.get(key)
        if isinstance(value, list | dict) and len(value) > MAX_ENUM_ENTRIES:
            reason = f"{key} has {len(value)} entries; the limit is {MAX_ENUM_ENTRIES}"
            raise SchemaError(f"{pointer}/{key}", reason)


def _patterns(nodes: list[tuple[str, dict[str, Any]]]) -> Iterator[tuple[str, str]]:
    for pointer, node in nodes:
        if isinstance(node.get("pattern"), str):
            yield f"{pointer}/pattern", node["pattern"]
        for key in node.get("patternProperties", {}):
            yield f"{pointer}/patternProperties/{_escape(key)}", key


def _check_patterns(nodes: list[tuple[str, dict[str, Any]]]) -> None:
    """Every pattern compiles on RE2, and building them all takes bounded time and memory."""
    seen: set[str] = set()
    program = 0
    for pointer, pattern in _patterns(nodes):
        if pattern not in seen:
            seen.add(pattern)
            program += _require_re2(pattern, pointer).programsize
        if program > MAX_PATTERN_PROGRAM:
            reason = f"the schema's patterns compile to more than {MAX_PATTERN_PROGRAM} RE2"
            raise SchemaError(pointer, reason + " instructions; prefer maxLength to {m,n} counts")


def _check_unevaluated(nodes: list[tuple[str, dict[str, Any]]]) -> None:
    """jsonschema matches patternProperties with Python's ``re`` inside unevaluatedProperties."""
    if any("patternProperties" in node for _, node in nodes):
        for pointer, node in nodes:
            if "unevaluatedProperties" in node:
                reason = (
                    "unevaluatedProperties cannot be combined with patternProperties "
                    "(those patterns would run on a backtracking engine)"
                )
                raise SchemaError(f"{pointer}/unevaluatedProperties", reason)


def resolve_ref(root: Any, ref: Any, pointer: str) -> Any:
    """The subschema a local ``$ref`` ('#' or '#/json/pointer') names inside ``root``."""
    if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
        reason = f"$ref {ref!r} is not local; only '#' and '#/...' pointers into this schema"
        raise SchemaError(pointer, reason + " are allowed")
    target = root
    for raw in unquote(ref[2:]).split("/") if ref != "#" else ():
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and token in target:
            target = target[token]
        elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
            target = target[int(token)]
        else:
            raise SchemaError(pointer, f"$ref {ref!r} does not resolve inside this schema")
    if not isinstance(target, dict | bool):
        raise SchemaError(
            pointer, f"$ref {ref!r} points at a {type(target).__name__}, not a schema"
        )
    return target


def _keyword(child: str, parent: str) -> str:
    """The keyword under which the subschema at pointer ``child`` sits in ``parent``."""
    return child[len(parent) + 1 :].split("/")[0]


class _Expansion:
    """Size and depth of the schema tree once every $ref is followed, memoised per node.

    A DAG of refs (a -> b, b; b -> c, c; ...) doubles at each level without any cycle, so each
    node's expanded size is computed once and the walk stops at the first bound it crosses.

    A $ref back to a node on the current path is recursion: allowed when the way round goes
    into a part of the value (``properties``, ``items``, ...), which is finite, so the
    recursion bottoms out (a tree node whose children $ref the node); refused when it stays on
    the same value (``{"allOf": [{"$ref": "#"}]}``). A recursion counts once in the bounds;
    the work of validating against it is bounded by ``MAX_REF_STEPS`` (``iter_errors``).
    """

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.memo: dict[int, tuple[int, int]] = {}  # id(node) -> (size, height)
        # Nodes on the current path -> how many times the path had gone into a part of the
        # value when it met them: meeting one again with no descent since is a cycle.
        self.active: dict[int, int] = {}
        self.descents = 0

    def visit(self, node: Any, pointer: str, depth: int) -> tuple[int, int]:
        if not isinstance(node, dict):
            return 1, 1
        size, height = self.memo.get(id(node)) or self._expand(node, pointer, depth)
        if depth + height - 1 > MAX_EXPANDED_DEPTH:
            reason = f"once $refs are followed, subschemas nest deeper than {MAX_EXPANDED_DEPTH}"
            raise SchemaError(pointer, reason)
        return size, height

    def _expand(self, node: dict[str, Any], pointer: str, depth: int) -> tuple[int, int]:
        if depth > MAX_EXPANDED_DEPTH:
            reason = f"once $refs are followed, subschemas nest deeper than {MAX_EXPANDED_DEPTH}"
            raise SchemaError(pointer, reason)
        self.active[id(node)] = self.descents
        parts = [
            self._descend(child, at, depth, in_place=_keyword(at, pointer) in _IN_PLACE)
            for at, child in _children(node, pointer, defs=False)
        ]
        if "$ref" in node:
            parts.append(self._follow(node["$ref"], f"{pointer}/$ref", depth))
        del self.active[id(node)]
        size = 1 + sum(part[0] for part in parts)
        if size > MAX_EXPANDED_SUBSCHEMAS:
            reason = f"once $refs are followed, it expands to more than {MAX_EXPANDED_SUBSCHEMAS}"
            raise SchemaError(pointer, reason + " subschemas")
        self.memo[id(node)] = size, 1 + max((part[1] for part in parts), default=0)
        return self.memo[id(node)]

    def _descend(self, child: Any, pointer: str, depth: int, *, in_place: bool) -> tuple[int, int]:
        self.descents += 0 if in_place else 1
        try:
            return self.visit(child, pointer, depth + 1)
        finally:
            self.descents -= 0 if in_place else 1

    def _follow(self, ref: str, pointer: str, depth: int) -> tuple[int, int]:
        target = resolve_ref(self.root, ref, pointer)
        entered = self.active.get(id(target))
        if entered == self.descents:
            reason = f"$ref {ref!r} forms a cycle that never goes into a part of the value"
            raise SchemaError(pointer, reason + " (it leads back to itself)")
        if entered is not None:
            return 1, 1  # recursion into a part of the value: counted once
        return self.visit(target, ref[1:], depth + 1)


def _check_object(schema: dict[str, Any]) -> None:
    if schema.get("type") != "object":
        where = "/type" if "type" in schema else ""
        reason = f"the schema must have type 'object', not {schema.get('type')!r}"
        raise SchemaError(where, reason)
    properties = schema.get("properties", {})
    for i, name in enumerate(schema.get("required", [])):
        if name not in properties:
            raise SchemaError(f"/required/{i}", f"required entry {name!r} is not in properties")


# --- RE2 -------------------------------------------------------------------------------------


def _re2_options() -> Any:
    options = re2.Options()
    options.log_errors = False  # errors are raised to the caller, not written to stderr
    options.max_mem = RE2_MAX_MEM
    return options


_RE2_OPTIONS = _re2_options()


@functools.lru_cache(maxsize=PATTERN_CACHE_SIZE)
def compile_pattern(pattern: str) -> Any:
    """The pattern compiled by RE2; raises ``re2.error`` (RE2 never falls back to ``re``)."""
    return re2.compile(pattern, _RE2_OPTIONS)


def _require_re2(pattern: str, pointer: str) -> Any:
    try:
        return compile_pattern(pattern)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else ""
        detail = detail.decode(errors="replace") if isinstance(detail, bytes) else str(detail)
        reason = f"pattern {pattern!r} cannot be compiled by the linear-time engine (RE2): {detail}"
        raise SchemaError(pointer, reason) from None


def _found(regex: Any, text: str) -> bool:
    """Whether ``regex`` matches somewhere in ``text`` (JSON Schema patterns are not anchored)."""
    try:
        return regex.search(text) is not None
    except UnicodeEncodeError:  # a lone surrogate, e.g. from "\\ud800" in the request's JSON
        return regex.search(text.encode("utf-8", "surrogatepass")) is not None


def additional_keys(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Keys of ``instance`` that neither ``properties`` nor ``patternProperties`` cover."""
    properties = schema.get("properties", {})
    regexes = [compile_pattern(p) for p in schema.get("patternProperties", {})]
    return [
        key
        for key in instance
        if key not in properties and not any(_found(regex, key) for regex in regexes)
    ]


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not _found(compile_pattern(pattern), instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        regex = compile_pattern(pattern)
        for key, value in instance.items():
            if _found(regex, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's additionalProperties, messages included, with patternProperties on RE2."""
    if not validator.is_type(instance, "object"):
        return
    extras = sorted(additional_keys(instance, schema))
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        joined = ", ".join(repr(key) for key in extras)
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            patterns = ", ".join(repr(p) for p in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {patterns}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(
                f"Additional properties are not allowed ({joined} {verb} unexpected)"
            )


# --- formats ---------------------------------------------------------------------------------

_DATE = re.compile(r"\d{4}-\d\d-\d\d", re.ASCII)
_TIME = re.compile(r"(\d\d):(\d\d):(\d\d)(?:\.\d+)?(?:[Zz]|[+-](\d\d):(\d\d))", re.ASCII)
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"{}|\\^`]*", re.ASCII)


def _is_time(instance: object) -> bool:
    """RFC 3339 full-time, e.g. 09:30:00Z or 09:30:00.5+02:00."""
    if not isinstance(instance, str):
        return True
    match = _TIME.fullmatch(instance)
    if match is None:
        return False
    hour, minute, second, off_hour, off_minute = (int(g or 0) for g in match.groups())
    return hour <= 23 and minute <= 59 and second <= 60 and off_hour <= 23 and off_minute <= 59


def _is_date_time(instance: object) -> bool:
    """RFC 3339 date-time, e.g. 2025-03-14T09:30:00Z."""
    if not isinstance(instance, str):
        return True
    day, separator, time = instance[:10], instance[10:11], instance[11:]
    if separator not in ("T", "t") or _DATE.fullmatch(day) is None:
        return False
    try:
        date.fromisoformat(day)
    except ValueError:
        return False
    return _is_time(time)


def _is_uri(instance: object) -> bool:
    """An absolute URI: a scheme, then no whitespace or characters URIs forbid."""
    return not isinstance(instance, str) or _URI.fullmatch(instance) is not None


def _is_regex(instance: object) -> bool:
    return not isinstance(instance, str) or bool(compile_pattern(instance))


@functools.cache
def _format_checker(cls: Any) -> FormatChecker:
    """The draft's own format checks, plus date-time, time and uri; regex on RE2."""
    checker = FormatChecker(formats=())
    checker.checkers = dict(cls.FORMAT_CHECKER.checkers)
    checker.checks("regex", raises=re2.error)(_is_regex)
    for name, check in (("date-time", _is_date_time), ("time", _is_time), ("uri", _is_uri)):
        checker.checkers.setdefault(name, (check, ()))
    return checker


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema compares unhashable items pairwise: 8,000 objects took 100 s of a core.
    Here each item becomes a hashable key with JSON's equality (1 == 1.0, true != 1, objects
    by content), so a check is one pass."""
    if not unique or not validator.is_type(instance, "array"):
        return
    seen: dict[Any, int] = {}
    for index, item in enumerate(instance):
        first = seen.setdefault(_json_key(item), index)
        if first != index:
            shown = _SHORT.repr(instance)  # not the whole array: it may be a megabyte
            yield ValidationError(
                f"{shown} has non-unique elements (items {first} and {index} are equal)"
            )
            return


_SHORT = reprlib.Repr()  # attributes, not arguments: Python 3.11
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxdict = 3, 8, 4
_SHORT.maxstring = _SHORT.maxother = 40


def _json_key(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, int | float):
        return ("number", value)  # Python's 1 == 1.0, with equal hashes, as JSON has it
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list):
        return ("array", tuple(_json_key(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((k, _json_key(v)) for k, v in value.items()))
    return ("other", repr(value))


def _multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """In exact decimal arithmetic: 0.3 is a multiple of 0.1 (jsonschema's float division
    says not), and a 400-digit integer is checked instead of overflowing (a 500)."""
    if not validator.is_type(instance, "number"):
        return
    try:
        quotient = _exact(instance) / _exact(divisor)
        failed = quotient.denominator != 1
    except (ValueError, OverflowError, ZeroDivisionError):  # Infinity or NaN in the call
        failed = True
    if failed:
        yield ValidationError(f"{instance!r} is not a multiple of {divisor}")


def _exact(number: float) -> Fraction:
    """A number as written: a float by its shortest decimal form (0.1 is 1/10)."""
    return Fraction(number) if isinstance(number, int) else Fraction(repr(number))


class TooCostly(Exception):
    """Validating one value followed more than ``MAX_REF_STEPS`` $refs (a recursive schema
    whose branches go over the same parts of the value again and again)."""


# The $refs one validation may still follow; None outside ``iter_errors``.
_ref_steps: ContextVar[list[int] | None] = ContextVar("ref_steps", default=None)


def _ref(validator: Any, ref: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's $ref, counted against the budget of the validation it is part of."""
    steps = _ref_steps.get()
    if steps is not None:
        steps[0] -= 1
        if steps[0] < 0:
            raise TooCostly(f"validating it follows more than {MAX_REF_STEPS} $refs")
    yield from _keywords.ref(validator, ref, instance, schema)


def iter_errors(validator: Validator, instance: Any) -> list[ValidationError]:
    """Every error of ``instance``, with the $refs followed bounded by ``MAX_REF_STEPS``:
    a recursive schema cannot make a validation take unbounded time. Raises ``TooCostly``."""
    token = _ref_steps.set([MAX_REF_STEPS])
    try:
        return list(validator.iter_errors(instance))
    finally:
        _ref_steps.reset(token)


@functools.cache
def _re2_class(cls: Any) -> Any:
    overrides = {
        "$ref": _ref,
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
        "uniqueItems": _unique_items,
        "multipleOf": _multiple_of,
    }
    return extend(cls, overrides)


_validators: OrderedDict[str, Validator] = OrderedDict()
_validators_lock = threading.Lock()


def make_validator(schema: Any) -> Validator:
    """A validator for ``schema`` (checked first), cached by the hash of its canonical JSON."""
    try:
        canonical = json.dumps(schema, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise SchemaError("", f"the schema is not plain JSON: {exc}") from None
    key = hashlib.sha256(canonical.encode()).hexdigest()
    with _validators_lock:
        if (cached := _validators.get(key)) is not None:
            _validators.move_to_end(key)
            return cached
    own = json.loads(canonical)  # a private copy: callers may mutate theirs
    check_schema(own, require_object=False)
    cls = validator_for(own, default=Draft202012Validator)
    validator: Validator = _re2_class(cls)(own, format_checker=_format_checker(cls))
    with _validators_lock:
        _validators[key] = validator
        while len(_validators) > VALIDATOR_CACHE_SIZE:
            _validators.popitem(last=False)
    return validator
