"""A forwarded call that did not give the tool's result, as the gateway words it."""

from __future__ import annotations

from typing import Any


class CallFailed(Exception):
    """``code``: the upstream's (an HTTP status, ``tool_error``) or the gateway's own;
    ``retryable``: the same call may succeed later; ``source_fault``: it says the source is
    unwell (counted by the circuit breaker)."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        retryable: bool = False,
        source_fault: bool = False,
        details: Any = None,
        suggestion: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable
        self.source_fault = source_fault
        self.details = details
        self.suggestion = suggestion
        self.attempts = 0  # requests sent upstream before it failed
