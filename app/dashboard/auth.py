"""Dashboard sessions: a key exchanged once at the login form for a signed, expiring cookie.

The cookie holds ``role.expires.nonce.signature`` and never the key: the signature is an
HMAC-SHA256 of the rest under a secret derived from the key that signed in. Verifying tries
every configured key of that role in constant time, so removing a key ends its sessions, on
every replica, without any server-side session store.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Literal

from app.settings import Settings

Role = Literal["admin", "dashboard"]  # the roles of app.deps.Caller that may look
COOKIE_NAME = "toolreach_dashboard"
COOKIE_PATH = "/dashboard"
SESSION_SECONDS = 8 * 3600
_LABEL = b"toolreach dashboard session v1"


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is looking: an admin key or a read-only dashboard key signed in."""

    role: Role
    expires: int


def _keys(settings: Settings, role: Role) -> tuple[str, ...]:
    return settings.admin_keys if role == "admin" else settings.dashboard_keys


def _any_match(value: bytes, candidates: list[bytes]) -> bool:
    """Constant time in the position of the match: every candidate is compared."""
    found = False
    for candidate in candidates:
        found |= hmac.compare_digest(value, candidate)
    return found


def role_for_key(key: str, settings: Settings) -> Role | None:
    """The role a submitted key grants, or None; admin wins when a key is in both lists."""
    given = key.encode()
    is_admin = _any_match(given, [k.encode() for k in settings.admin_keys])
    is_viewer = _any_match(given, [k.encode() for k in settings.dashboard_keys])
    if is_admin:
        return "admin"
    return "dashboard" if is_viewer else None


def _signature(key: str, payload: str) -> str:
    secret = hmac.new(key.encode(), _LABEL, hashlib.sha256).digest()
    return hmac.new(secret, payload.encode(), hashlib.sha256).hexdigest()


def issue(key: str, role: Role, now: float | None = None) -> str:
    """A session token signed with `key`; it expires SESSION_SECONDS from now."""
    expires = int(now if now is not None else time.time()) + SESSION_SECONDS
    payload = f"{role}.{expires}.{secrets.token_urlsafe(12)}"
    return f"{payload}.{_signature(key, payload)}"


def verify(token: str, settings: Settings, now: float | None = None) -> Viewer | None:
    """The viewer a cookie stands for, or None if it is malformed, forged or expired."""
    parts = token.split(".")
    if len(parts) != 4 or parts[0] not in ("admin", "dashboard") or not parts[1].isdigit():
        return None
    role: Role = "admin" if parts[0] == "admin" else "dashboard"
    expires = int(parts[1])
    current = now if now is not None else time.time()
    if not current < expires <= current + SESSION_SECONDS + 60:
        return None
    payload = ".".join(parts[:3])
    expected = [_signature(key, payload).encode() for key in _keys(settings, role)]
    if not _any_match(parts[3].encode(), expected):
        return None
    return Viewer(role, expires)
