"""What an OpenAPI operation does, in words: its kind, what it acts on, the action names its
body declares, and a summary for an operation that has none.

An operation knows its method, whether its path names a collection (``/folders``) or an
item (``/folders/{folder_id}``), and its body. From these it is one *kind* of operation:
create, list, read, change, delete, or an action (``kind``). Two things go on its card:

* **examples** (``ToolCard.examples``): only what the document declares. An action body whose
  ``type`` is an enum, or a ``oneOf`` of bodies each with its own ``type``, names its actions
  (``POST /droplets/{id}/actions`` with ``snapshot``, ``reboot``, ``resize``): each becomes an
  example (``snapshot the droplet``). No verbs are invented: which verb a step uses for which
  kind is the router's to read (app/routing/actions.py), not text to write into a card.
* **a summary** (``written_summary``) where the operation has neither summary nor
  description, from its operationId, method and path, as a person would write it:
  ``POST /v1/Services/{ServiceSid}/AlphaSenders`` (``CreateAlphaSender``) reads "Create an
  alpha sender for the service".
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from typing import Any

MAX_ACTIONS = 24
# The summary's first verb (present, or third person: "Updates a message.") and its kind.
SUMMARY_VERBS: dict[str, str] = {
    **dict.fromkeys(("create", "add", "new", "make", "initiate", "open", "start"), "create"),
    **dict.fromkeys(("list", "browse"), "list"),
    **dict.fromkeys(("get", "retrieve", "read", "fetch", "show", "view"), "read"),
    **dict.fromkeys(
        ("update", "change", "edit", "modify", "patch", "replace", "set", "rename"), "change"
    ),
    **dict.fromkeys(("delete", "remove", "destroy", "erase", "purge"), "delete"),
    **{verb: verb for verb in ("copy", "restore", "download", "upload", "apply", "assign")},
    **{verb: verb for verb in ("cancel", "move")},
    "transfer": "move",
}
_SKIPPED = frozenset(
    {"permanently", "all", "a", "an", "the", "new", "existing", "one", "of", "every"}
)
_PARAMETER = re.compile(r"^\{[^}]*\}$")


def _verb(word: str) -> str | None:
    lower = word.lower().strip(".,:;")
    for form in (
        lower,
        lower[:-1] if lower.endswith("s") else "",
        lower[:-2] if lower.endswith("es") else "",
    ):
        if form in SUMMARY_VERBS:
            return SUMMARY_VERBS[form]
    return None


def read_summary(summary: str) -> tuple[str | None, str]:
    """(the kind its first verb says, what it acts on) of a summary such as "Permanently
    remove file" (delete, "file") or "Updates a message." (change, "message")."""
    words = summary.replace("/", " / ").split()
    while words and words[0].lower() in _SKIPPED:
        words.pop(0)
    found = _verb(words[0]) if words else None
    rest = words[1:] if found else words
    while rest and rest[0].lower().strip(".,") in _SKIPPED:
        rest.pop(0)
    return found, " ".join(rest).strip(" .")


def kind(method: str, path: str, summary: str = "") -> str | None:
    """The operation's kind: its summary's verb if it is one of ``SUMMARY_VERBS``; for an
    operation with no summary, its method and whether its path ends at an item. A summary
    whose verb is another ("Copy folder", "Authorize user") is its own action: no guess."""
    said, _ = read_summary(summary)
    if said is not None or summary.strip():
        return said
    segments = [s for s in path.split("#")[0].split("/") if s]
    item = bool(segments) and _PARAMETER.match(segments[-1]) is not None
    return {
        "GET": "read" if item else "list",
        "PUT": "change",
        "PATCH": "change",
        "DELETE": "delete",
    }.get(method.upper())


def singular(word: str) -> str:
    lower = word.lower()
    if lower.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if lower.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if lower.endswith("s") and not lower.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


def resource(path: str) -> str:
    """The thing a path is about, in words: its last literal segment, singular (before an
    ``/actions`` segment; an RPC path's object, ``conversations`` of ``/conversations.kick``)."""
    segments = [s for s in path.split("#")[0].split("/") if s and not _PARAMETER.match(s)]
    while len(segments) > 1 and segments[-1].lower() in ("actions", "action"):
        segments.pop()
    if not segments:
        return ""
    parts = segments[-1].split(":")[0].split(".")
    last = parts[-2] if len(parts) > 1 else parts[0]
    words = re.split(r"[_\-\s]+|(?<=[a-z])(?=[A-Z])", last)
    return " ".join(singular(w.lower()) for w in words if w)


def obj(summary: str, path: str) -> str:
    """What the operation acts on: its summary without its verb, else its path's resource."""
    _, rest = read_summary(" ".join(summary.split()))
    return rest[:80] if rest and len(rest.split()) <= 8 else resource(path)


def actions(parameters: Mapping[str, Any]) -> list[str]:
    """The names of an action body's ``type``: an enum of two or more, or the ``type`` of
    each of a ``oneOf`` of bodies (a lone ``type: [folder]`` only says what the body is)."""
    properties = parameters.get("properties") or {}
    found: list[str] = []
    for schema in _typed(properties.get("type"), properties.get("body")):
        found.extend(str(v) for v in _type_values(schema) if isinstance(v, str))
    found = list(dict.fromkeys(found))
    return found[:MAX_ACTIONS] if len(found) > 1 else []


def _typed(flat_type: Any, body: Any) -> Iterator[Any]:
    if isinstance(flat_type, Mapping):
        yield flat_type
    if isinstance(body, Mapping):
        for alternative in [*(body.get("oneOf") or []), *(body.get("anyOf") or [])]:
            if isinstance(alternative, Mapping):
                yield (alternative.get("properties") or {}).get("type")
        yield (body.get("properties") or {}).get("type")


def _type_values(schema: Any) -> list[Any]:
    if not isinstance(schema, Mapping):
        return []
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    return [schema["const"]] if "const" in schema else []


def examples(path: str, parameters: Mapping[str, Any]) -> list[str]:
    """Requests that should route to the operation, as its document declares them: its body's
    action names with what they act on (``reboot the droplet``)."""
    found = [f"{_words(action)} the {resource(path)}" for action in actions(parameters)]
    return list(dict.fromkeys(e[:1000] for e in found if e.strip()))[:50]


# A written summary's verb for each kind, and for an operationId's leading verb.
_SAID = {"create": "Create", "list": "List", "read": "Get", "change": "Update", "delete": "Delete"}
_ID_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def written_summary(method: str, path: str, operation_id: str = "") -> str:
    """A summary for an operation that has none: its operationId read as words when it starts
    with a verb (``CreateAlphaSender``: "Create an alpha sender"), else its kind's verb and its
    path's resource (a POST to a collection creates); then the resource it belongs to, the
    one the path names before it ("… for the service"). ``""`` when neither says anything."""
    said = [w.lower() for w in _ID_WORD.findall(operation_id)]
    verb = SUMMARY_VERBS.get(said[0]) if said else None
    thing = resource(path)
    collection = not _is_item(path)
    if verb is not None and len(said) > 1:
        words = said[1:]
    else:
        verb = kind(method, path) or ("create" if method.upper() == "POST" and collection else None)
        if verb not in _SAID or not thing:
            return ""
        said, words = [_SAID[verb]], thing.split()
    if verb == "list" and not words[-1].endswith("s"):
        words = [*words[:-1], words[-1] + "s"]
    head = " ".join([said[0].capitalize(), *words])
    owner = _owner(path, thing)
    if owner:
        head += f" {'for' if verb == 'create' else 'of'} the {owner}"
    return _article_after_verb(head)


def _is_item(path: str) -> bool:
    segments = [s for s in path.split("#")[0].split("/") if s]
    return bool(segments) and _PARAMETER.match(segments[-1]) is not None


def _owner(path: str, thing: str) -> str:
    """The resource the path's resource belongs to: ``service`` in
    ``/v1/Services/{ServiceSid}/AlphaSenders/{Sid}``."""
    segments = [s for s in path.split("#")[0].split("/") if s]
    owners = [
        resource("/" + before)
        for before, segment in itertools.pairwise(segments)
        if _PARAMETER.match(segment) and not _PARAMETER.match(before)
    ]
    owners = [o for o in owners if o and o != thing]
    return owners[-1] if owners else ""


def _article_after_verb(text: str) -> str:
    """ "Create alpha sender" as "Create an alpha sender" (one thing after a verb)."""
    verb, _, rest = text.partition(" ")
    if not rest or verb.lower() == "list":
        return text
    article = "an" if rest[0].lower() in "aeiou" else "a"
    return f"{verb} {article} {rest}"


def _words(name: str) -> str:
    """``power_off`` as "power off", ``enableBackups`` as "enable backups"."""
    return " ".join(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).replace("_", " ").split()).lower()
