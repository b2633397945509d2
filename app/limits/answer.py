"""What a refusal is answered with: the 429 in the one error shape (app/errors.py)."""

from __future__ import annotations

from app.errors import TooManyRequests
from app.limits.counts import Kind, Refusal

_MESSAGES: dict[Kind, str] = {
    "auth": "too many failed sign-ins (unknown or revoked keys) from this address",
    "client": "too many requests from this address",
    "key": "too many requests with this key",
}


def too_many(refusal: Refusal) -> TooManyRequests:
    """The 429 a refusal is answered with, in the one error shape."""
    return TooManyRequests(
        f"{_MESSAGES[refusal.kind]}; retry in {refusal.retry_after} s",
        refusal.retry_after,
        {"limit": refusal.kind, "retry_after": refusal.retry_after},
    )
