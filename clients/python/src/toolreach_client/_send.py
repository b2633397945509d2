"""The bookkeeping of one request's tries, shared by the sync and async send loops."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from toolreach_client._api import ApiCall
from toolreach_client.errors import TransportError, error_from_response
from toolreach_client.retry import RETRY_STATUSES, RetryPolicy, may_repeat, retry_after

# How long a report waits for its route to reach this replica's database (the event
# writer's flush interval is 1 s by default; docs/API.md, "Feedback").
ROUTE_LAG_SECONDS = 1.0


@dataclass
class Tries:
    """``failed`` and ``answered`` give the wait before the next try, or raise."""

    call: ApiCall[Any]
    policy: RetryPolicy
    number: int = 0
    unanswered: bool = False  # an earlier try was sent and got no answer: it may have run

    def failed(self, exc: httpx.TransportError) -> float:
        self.number += 1
        wait = (
            self.policy.delay(self.number, None) if may_repeat(exc, self.call.idempotent) else None
        )
        if wait is None:
            raise TransportError(f"{self.call.method} {self.call.path}: {exc!r}") from exc
        self.unanswered |= not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
        return wait

    def answered(self, response: httpx.Response) -> float | None:
        """None: the answer is a success, to parse."""
        if response.is_success:
            return None
        self.number += 1
        hint = retry_after(response)
        wait = None
        if response.status_code in RETRY_STATUSES:
            wait = self.policy.delay(self.number, hint)
        elif response.status_code == 404 and self.call.route_lag:
            wait = self.policy.delay(self.number, ROUTE_LAG_SECONDS)
        if wait is None:
            error = error_from_response(response, hint)
            error.unanswered = self.unanswered
            raise error
        return wait
