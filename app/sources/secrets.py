"""Secrets by reference: a source names where its credentials are (an environment variable,
a file under ``TOOLREACH_SECRET_DIRS``); they are read at call time, sent to the source, and
never stored, returned, logged or shown. An answer that echoes one has it masked."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.sources.schemas import SecretRef, Value

MASK = "[secret]"
MIN_MASKED = 4  # shorter values would mask ordinary text


class SecretMissing(Exception):
    """A referenced secret cannot be read; the message names the reference, not a value."""


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


@dataclass
class Resolved:
    """Values resolved for one request, and the secret ones among them (to mask)."""

    values: dict[str, str] = field(default_factory=dict)
    secrets: list[str] = field(default_factory=list)


def resolve_all(values: Mapping[str, Value], secret_dirs: Iterable[str]) -> Resolved:
    resolved = Resolved()
    for key, value in values.items():
        if isinstance(value, SecretRef):
            text = resolve(value, secret_dirs)
            resolved.values[key] = text
            resolved.secrets.extend(s for s in (text, text.removeprefix(value.prefix)) if s)
        else:
            resolved.values[key] = value
    return resolved


def mask(value: Any, secrets: Iterable[str]) -> Any:
    """``value`` (any JSON) with every secret in its strings replaced by ``[secret]``."""
    hidden = sorted({s for s in secrets if len(s) >= MIN_MASKED}, key=len, reverse=True)
    if not hidden:
        return value
    return _mask(value, hidden)


def _mask(value: Any, hidden: list[str]) -> Any:
    if isinstance(value, str):
        for secret in hidden:
            value = value.replace(secret, MASK)
        return value
    if isinstance(value, Mapping):
        return {_mask(k, hidden): _mask(v, hidden) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask(v, hidden) for v in value]
    return value
