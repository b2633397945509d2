"""When to send a request again, and how long to wait first (pure: no I/O here).

- 503 and 429 are refusals before any work ("every write is safe to retry after a 503"), so
  any request may be repeated after one; the wait is the answer's ``Retry-After`` plus a
  little jitter, and a ``Retry-After`` longer than ``max_wait`` is not waited for.
- A request that got no answer at all may have run. Only an idempotent one (GET, PUT,
  DELETE, route, validate, feedback, bulk) is sent again; a connection that was never
  made (nothing sent) may be retried for any request.
- Attempts are bounded by ``max_retries``; without ``Retry-After`` the wait grows
  exponentially with full jitter (AWS "Exponential Backoff and Jitter").
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

RETRY_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` repeats at most, none waiting longer than ``max_wait`` seconds."""

    max_retries: int = 3
    max_wait: float = 30.0
    backoff: float = 0.5
    jitter: float = 0.1
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def delay(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before retry number ``attempt`` (from 1); None: give up."""
        if attempt > self.max_retries:
            return None
        if retry_after is not None:
            if retry_after > self.max_wait:
                return None
            return min(self.max_wait, retry_after * (1 + self.jitter * self.rng.random()))
        return self.rng.uniform(0, min(self.max_wait, self.backoff * 2 ** (attempt - 1)))


NO_RETRY = RetryPolicy(max_retries=0)


def retry_after(response: httpx.Response) -> float | None:
    """``Retry-After`` in seconds, from either form (delta-seconds or an HTTP date)."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def may_repeat(error: httpx.TransportError, idempotent: bool) -> bool:
    """A request that got no answer: repeat it if it is idempotent or was never sent."""
    return idempotent or isinstance(error, httpx.ConnectError | httpx.ConnectTimeout)
