"""Secrets by reference: a source names where its credentials are (an environment variable,
a file under ``TOOLREACH_SECRET_DIRS``); they are read at call time, sent to the source, and
never stored, returned, logged or shown. A message about one names the reference, never the
value; an answer that echoes one has it masked (app/sources/masking.py)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from app.sources.schemas import SecretRef, SourceConfig, Value

Check = Callable[[str], str | None]  # why a value cannot be used where it goes, or None


class SecretMissing(Exception):
    """A referenced secret cannot be read or used; the message names the reference, not a
    value."""


def describe(ref: SecretRef) -> str:
    """The reference, as a message names it."""
    return f"the environment variable {ref.env}" if ref.env else f"the secret file {ref.file}"


def check_file_ref(ref: SecretRef, secret_dirs: Iterable[str]) -> None:
    """Refuse a file reference outside the secret directories (checked on registration and
    again when read: a symbolic link may move)."""
    if ref.file is None:
        return
    path = Path(ref.file).resolve()
    if not any(path.is_relative_to(Path(d).resolve()) for d in secret_dirs):
        dirs = ", ".join(secret_dirs) or "(none)"
        raise SecretMissing(f"the secret file {ref.file} is outside TOOLREACH_SECRET_DIRS ({dirs})")


def resolve(ref: SecretRef, secret_dirs: Iterable[str]) -> str:
    if ref.env is not None:
        value = os.environ.get(ref.env)
        if value is None:
            raise SecretMissing(f"the environment variable {ref.env} is not set")
        return ref.prefix + value
    check_file_ref(ref, secret_dirs)
    try:
        value = Path(str(ref.file)).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise SecretMissing(
            f"the secret file {ref.file} cannot be read: {type(exc).__name__}"
        ) from None
    return ref.prefix + value


def env_problem(value: str) -> str | None:
    """Why ``value`` cannot be a process's environment variable, or None if it can."""
    return "it holds a NUL character" if "\x00" in value else None


@dataclass
class Resolved:
    """Values resolved for one request, and the secret ones among them (to mask)."""

    values: dict[str, str] = field(default_factory=dict)
    secrets: list[str] = field(default_factory=list)


def resolve_all(
    values: Mapping[str, Value], secret_dirs: Iterable[str], check: Check | None = None
) -> Resolved:
    """Each value, a secret read now; ``check`` refuses a secret its place cannot hold (a
    line break in a header), naming the reference."""
    resolved = Resolved()
    for key, value in values.items():
        if isinstance(value, SecretRef):
            text = resolve(value, secret_dirs)
            problem = check(text) if check is not None else None
            if problem is not None:
                raise SecretMissing(f"{describe(value)} cannot be sent as {key}: {problem}")
            resolved.values[key] = text
            resolved.secrets.extend(s for s in (text, text.removeprefix(value.prefix)) if s)
        else:
            resolved.values[key] = value
    return resolved


def secret_values(config: SourceConfig, secret_dirs: Iterable[str]) -> list[str]:
    """The values a source's secrets hold now (those that can be read), to mask out of what
    comes back from it, its errors included."""
    found: list[str] = []
    for values in (config.headers, config.query, config.env):
        for value in values.values():
            if isinstance(value, SecretRef):
                try:
                    text = resolve(value, secret_dirs)
                except SecretMissing:
                    continue
                found.extend(s for s in (text, text.removeprefix(value.prefix)) if s)
    return found


class _NoQueryInLogs(logging.Filter):
    """httpx and httpx2 log each request's URL at INFO: it goes out without its query, where
    a source's API key may be."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) > 1 and "?" in str(args[1]):
            url = str(args[1]).split("?", 1)[0] + "?[query]"
            record.args = (args[0], url, *args[2:])
        return True


class _NoAnswersInLogs(logging.Filter):
    """The MCP SDK logs a server's answer it could not read with its traceback, whose
    validation error quotes the answer (a secret it echoes, unmasked) and may run to many
    kilobytes: the line keeps its message and the exception's first line only."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            first = (str(exc).splitlines() or [""])[0][:200]
            record.msg, record.args = f"{record.getMessage()} ({type(exc).__name__}: {first})", None
            record.exc_info, record.exc_text = None, None
        return True


_NO_QUERY = _NoQueryInLogs()
_NO_ANSWERS = _NoAnswersInLogs()
MCP_CLIENT_LOGGERS = ("mcp.client.streamable_http", "mcp.client.sse", "mcp.client.stdio")


def keep_secrets_out_of_logs() -> None:
    """Install the filters on the HTTP libraries' and the MCP SDK's loggers (once)."""
    for names, found in ((("httpx", "httpx2"), _NO_QUERY), (MCP_CLIENT_LOGGERS, _NO_ANSWERS)):
        for name in names:
            logger = logging.getLogger(name)
            if found not in logger.filters:
                logger.addFilter(found)
