"""What an OpenAPI operation does, said as a user would say it: the card's examples.

An operation knows its method, whether its path names a collection (``/folders``) or an
item (``/folders/{folder_id}``), and its body. From these it is one *kind* of operation:
create (POST on a collection), list (GET on a collection), read (GET on an item), change
(PUT or PATCH), delete (DELETE), or an action (POST on an item, or on a path that ends in a
verb: ``/files/{id}/copy``). A step asks for one kind with its own verb ("provision a
server", "grow the disk", "throw away the file"), which the operation's summary rarely
shares ("Create droplet", "Update volume", "Delete file").

So each card gets example requests (``ToolCard.examples``: "requests that should route
here", which the router reads as their own vectors and words) made of the kind's verbs and
the operation's object (its summary without its verb): ``add a folder``, ``make a new
folder``, ``set up a folder``. An action body whose ``type`` is an enum, or a ``oneOf`` of
bodies each with its own ``type``, names its actions (``POST /droplets/{id}/actions`` with
``snapshot``, ``reboot``, ``resize``): each becomes an example too (``snapshot droplet``), and
the description lists them. An operation with its own examples (``x-examples`` is not
standard, so none) is not guessed at: only the method, path and body are read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

# Each kind's verbs, as users say them. The first is the kind's own word.
VERBS: dict[str, tuple[str, ...]] = {
    "create": ("create a new", "add a", "make a", "provision a", "spin up a", "set up a"),
    "list": ("list all", "show all", "see every", "browse the"),
    "read": ("get the", "show the", "look up the", "view the"),
    "change": ("update the", "change the", "edit the", "modify the", "resize the", "rename the"),
    "delete": ("delete the", "remove the", "destroy the", "get rid of the", "throw away the"),
    # Actions many APIs name in their summaries, in the words users say them with.
    "copy": ("copy the", "duplicate the", "clone the", "make a copy of the"),
    "restore": ("restore the", "bring back the", "recover the", "undelete the"),
    "download": ("download the", "grab the contents of the", "save a local copy of the"),
    "upload": ("upload a", "put a new", "send a"),
    "apply": ("apply a", "put a", "stamp a", "add a"),
    "assign": ("assign the", "hand over the", "give the"),
    "cancel": ("cancel the", "call off the", "abort the", "stop the"),
    "move": ("move the", "transfer the", "relocate the"),
}
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


def examples(method: str, path: str, summary: str, parameters: Mapping[str, Any]) -> list[str]:
    """Requests that should route to the operation: its actions, its summary, and its
    kind's verbs with what it acts on."""
    found = [f"{_words(action)} the {resource(path)}" for action in actions(parameters)]
    own = " ".join(summary.split()).rstrip(".")
    if own and len(own.split()) <= 12:  # the summary itself: every card has its say
        found.append(own[0].lower() + own[1:])
    what, thing = kind(method, path, summary), obj(summary, path)
    if what in VERBS and thing:
        found.extend(_article(f"{verb} {thing}") for verb in VERBS[what])
    return list(dict.fromkeys(e[:1000] for e in found if e.strip()))[:50]


def _words(name: str) -> str:
    """``power_off`` as "power off", ``enableBackups`` as "enable backups"."""
    return " ".join(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).replace("_", " ").split()).lower()


def _article(text: str) -> str:
    """ "add a emoji" as "add an emoji"."""
    return re.sub(r"\ba (?=[aeiouAEIOU])", "an ", text)
