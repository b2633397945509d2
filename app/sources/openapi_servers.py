"""Where an OpenAPI operation is served: the base URL its binding sends calls to.

The operation's own ``servers`` win over its path item's, and those over the document's
(OpenAPI 3; Swagger 2.0 has one ``host``, ``basePath`` and ``schemes``). Of a level's
servers the first whose URL can be used is taken; a level that names servers is never
passed over for the next (the document's servers are not the operation's). A URL is used
with each variable at its default, and relative to where the document was read.

An operation whose server cannot be used — a variable with no default (``https://{agent_url}``),
no host (``https://``, "the URL comes from another call's answer"), relative to a file — is
still imported: its card says why the gateway cannot call it, and its binding has no server
(``Unserved``), until the source is given a ``base_url``. It never sinks the document.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urljoin, urlsplit

from app.sources.documents import Documents
from app.sources.openapi_request import Operation

_VARIABLE = re.compile(r"\{([^{}]*)\}")
ABOUT_CHARS = 300  # of a server's description, in the reason


class Unserved(Exception):
    """The operation's server cannot be used as it is; the message says why."""


def server(documents: Documents, version: str, operation: Operation) -> str:
    """The base URL the operation is served at; Unserved when it cannot be used."""
    if version == "2.0":
        return _swagger_server(documents)
    for level in (operation.node, operation.item, documents.document):
        servers = level.get("servers")
        if isinstance(servers, list) and servers:
            return _first_usable(documents.root, servers)
    if documents.root.startswith("file:"):
        raise Unserved("the document names no server")
    return urljoin(documents.root, "/").rstrip("/")


def _swagger_server(documents: Documents) -> str:
    root = documents.document
    origin = urlsplit(documents.root)
    schemes = root.get("schemes") or [origin.scheme if origin.scheme != "file" else "https"]
    scheme = "https" if "https" in schemes else str(schemes[0])
    host = root.get("host") or (origin.netloc if origin.scheme != "file" else "")
    if not host:
        raise Unserved("the document names no host")
    return f"{scheme}://{host}{root.get('basePath') or ''}".rstrip("/")


def _first_usable(document_uri: str, servers: list[Any]) -> str:
    reasons = []
    for entry in servers:
        try:
            return server_url(document_uri, entry)
        except Unserved as exc:
            reasons.append(str(exc))
    raise Unserved("; ".join(dict.fromkeys(reasons)) or "its servers are empty")


def server_url(document_uri: str, entry: Any) -> str:
    """One Server Object's URL, its variables at their defaults, made absolute."""
    if not isinstance(entry, Mapping):
        raise Unserved("its server is not a Server Object")
    written = str(entry.get("url") or "/")
    url = _substituted(written, entry.get("variables"))
    if not urlsplit(url).scheme:
        if document_uri.startswith("file:"):
            raise Unserved(
                f"its server URL {written!r} is relative to where the document was read, "
                "a file, not a URL" + _about(entry)
            )
        url = urljoin(document_uri, url)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Unserved(f"its server URL {written!r} names no host" + _about(entry))
    return url.rstrip("/")


def _substituted(url: str, variables: Any) -> str:
    """``url`` with each ``{name}`` at its variable's default; Unserved for one without."""
    defaults = variables if isinstance(variables, Mapping) else {}

    def value(match: re.Match[str]) -> str:
        variable = defaults.get(match.group(1))
        if isinstance(variable, Mapping) and isinstance(variable.get("default"), str | int):
            return str(variable["default"])
        about = variable.get("description") if isinstance(variable, Mapping) else None
        raise Unserved(
            f"its server URL {url!r} has the variable {{{match.group(1)}}} with no default"
            + (f" ({_short(about)})" if about else "")
        )

    return _VARIABLE.sub(value, url)


def _about(entry: Mapping[str, Any]) -> str:
    about = entry.get("description")
    return f" ({_short(about)})" if isinstance(about, str) and about.strip() else ""


def _short(text: Any) -> str:
    words = " ".join(str(text).split())
    return words if len(words) <= ABOUT_CHARS else words[: ABOUT_CHARS - 1].rstrip() + "…"
