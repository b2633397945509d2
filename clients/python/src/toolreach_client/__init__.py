"""ToolReach's Python client: route each agent step, validate, call and report.

    from toolreach_client import ToolReach

    client = ToolReach("http://127.0.0.1:8000")
    step = client.route("weather in Paris", format="openai")
    ...  # the model chooses among step.tools
    step.validate(name, arguments)
    step.report(name, "success")

Adapters for agent frameworks are in ``toolreach_client.adapters`` (each imports its
framework only when used).
"""

from toolreach_client.aclient import AsyncToolReach, AsyncTools
from toolreach_client.client import ToolReach, Tools
from toolreach_client.errors import (
    APIError,
    BadRequest,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ToolCallError,
    ToolReachError,
    TransportError,
    Unauthorized,
    Unavailable,
)
from toolreach_client.models import (
    BatchCallResult,
    CallError,
    CallRequest,
    CallResult,
    Candidate,
    Feedback,
    RouteAnswer,
    RouteBatchAnswer,
    Stats,
    Tool,
    ToolList,
    Validation,
)
from toolreach_client.retry import NO_RETRY, RetryPolicy
from toolreach_client.step import AsyncStep, Step

__all__ = [
    "NO_RETRY",
    "APIError",
    "AsyncStep",
    "AsyncToolReach",
    "AsyncTools",
    "BadRequest",
    "BatchCallResult",
    "CallError",
    "CallRequest",
    "CallResult",
    "Candidate",
    "Conflict",
    "Feedback",
    "Forbidden",
    "InvalidInput",
    "NotFound",
    "PayloadTooLarge",
    "RateLimited",
    "RetryPolicy",
    "RouteAnswer",
    "RouteBatchAnswer",
    "Stats",
    "Step",
    "Tool",
    "ToolCallError",
    "ToolList",
    "ToolReach",
    "ToolReachError",
    "Tools",
    "TransportError",
    "Unauthorized",
    "Unavailable",
    "Validation",
]
__version__ = "0.1.0"
