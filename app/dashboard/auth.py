"""Dashboard sessions: a key exchanged once at the login form for a signed, expiring cookie.

The cookie holds ``key_id.expires.nonce.signature`` and never the key: the signature is an
HMAC-SHA256 of the rest under a secret derived from the key's SHA-256 digest, which the
service holds for every key it knows (environment and table: app/keys/store.py). Verifying
finds the key by its id in the key store, so removing or revoking a key ends its sessions on
every replica (within the key store's refresh interval) without any server-side session
store; and the key's role and scope are read at each request, so a key limited to namespaces
sees only those.

Why the digest and not the key: the table holds digests only. Whoever can read the key table
could therefore sign a dashboard session, and see through it only what the database they
read already holds (the dashboard only reads); the API itself still needs the key.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Literal

from app.keys.store import KeyRecord, KeyStore

Role = Literal["admin", "dashboard"]  # the roles of app.deps.Caller that may look
COOKIE_NAME = "toolreach_dashboard"
COOKIE_PATH = "/dashboard"
SESSION_SECONDS = 8 * 3600
_LABEL = b"toolreach dashboard session v2"


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is looking: an admin key or a read-only dashboard key signed in, and the
    namespaces it may see (None: every one)."""

    role: Role
    expires: int
    namespaces: frozenset[str] | None = None
    key_id: str = ""

    def can_see(self, namespace: str) -> bool:
        return self.namespaces is None or namespace in self.namespaces


def key_for_login(key: str, keys: KeyStore) -> KeyRecord | None:
    """The key a submitted text is, if it may look at the dashboard (admin or dashboard)."""
    record = keys.resolve(key)
    return record if record is not None and record.role in ("admin", "dashboard") else None


def _signature(record: KeyRecord, payload: str) -> str:
    secret = hmac.new(bytes.fromhex(record.digest), _LABEL, hashlib.sha256).digest()
    return hmac.new(secret, payload.encode(), hashlib.sha256).hexdigest()


def issue(record: KeyRecord, now: float | None = None) -> str:
    """A session token for the key ``record``; it expires SESSION_SECONDS from now."""
    expires = int(now if now is not None else time.time()) + SESSION_SECONDS
    payload = f"{record.id}.{expires}.{secrets.token_urlsafe(12)}"
    return f"{payload}.{_signature(record, payload)}"


def verify(token: str, keys: KeyStore, now: float | None = None) -> Viewer | None:
    """The viewer a cookie stands for, or None if it is malformed, forged or expired, or its
    key is no longer known (or no longer one that may look)."""
    parts = token.split(".")
    if len(parts) != 4 or not parts[1].isdigit():
        return None
    expires = int(parts[1])
    current = now if now is not None else time.time()
    if not current < expires <= current + SESSION_SECONDS + 60:
        return None
    record = keys.by_id(parts[0])
    if record is None or record.role not in ("admin", "dashboard"):
        return None
    expected = _signature(record, ".".join(parts[:3]))
    if not hmac.compare_digest(parts[3].encode(), expected.encode()):
        return None
    role: Role = "admin" if record.role == "admin" else "dashboard"
    return Viewer(role, expires, record.namespaces, record.id)
