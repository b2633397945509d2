"""One routed step: its answer and its ``route_id``, so that validating, calling and
reporting need only the tool's name (the name the model used, exported or not)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolreach_client.models import (
    CallResult,
    Candidate,
    Feedback,
    Outcome,
    RouteAnswer,
    Validation,
)

if TYPE_CHECKING:
    from toolreach_client.aclient import AsyncToolReach
    from toolreach_client.client import ToolReach


def recorded(result: CallResult) -> bool:
    """Whether the gateway recorded the call as its route's report (a real tool's)."""
    return result.ok or (result.error is not None and result.error.code != "unknown_tool")


class _Routed:
    def __init__(self, answer: RouteAnswer) -> None:
        self.answer = answer
        # A call through the gateway with the route_id is the step's report already.
        self.recorded_by_call = False

    @property
    def route_id(self) -> str:
        return self.answer.route_id

    @property
    def namespace(self) -> str:
        return self.answer.namespace

    @property
    def candidates(self) -> list[Candidate]:
        return self.answer.candidates

    @property
    def names(self) -> list[str]:
        """The candidates' tool names, best first."""
        return [c.name for c in self.answer.candidates]

    @property
    def parts(self) -> list[str]:
        """The step's parts as the service read them (``[]`` for a step of one request)."""
        return self.answer.parts or []

    def for_part(self, part: int) -> list[str]:
        """The names of the candidates that serve part ``part`` (an index into ``parts``),
        best first."""
        return [c.name for c in self.answer.candidates if c.part == part]

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The definitions for the model's request (empty with format ``raw``)."""
        return self.answer.tools or []

    def tool_name(self, name: str) -> str:
        """The tool's own name for a name the model used (exported names map back)."""
        return (self.answer.tool_names or {}).get(name, name)

    def offers(self, name: str) -> bool:
        """Whether the model's ``name`` is one of this step's candidates."""
        return self.tool_name(name) in self.names

    def __repr__(self) -> str:
        return f"{type(self).__name__}(route_id={self.route_id!r}, names={self.names!r})"


class Step(_Routed):
    """A routed step of the sync client."""

    def __init__(self, client: ToolReach, answer: RouteAnswer) -> None:
        super().__init__(answer)
        self._client = client

    def validate(self, name: str, arguments: dict[str, Any], *, record: bool = False) -> Validation:
        """Check a call before it runs. ``record`` also makes it this route's choice
        (outcome unknown); off by default, since the model may still change tools."""
        return self._client.validate(
            self.tool_name(name),
            arguments,
            namespace=self.namespace,
            route_id=self.route_id if record else None,
        )

    def call(self, name: str, arguments: dict[str, Any]) -> CallResult:
        """Call the tool through the gateway; the call is the step's report."""
        result = self._client.call(
            self.tool_name(name), arguments, namespace=self.namespace, route_id=self.route_id
        )
        self.recorded_by_call |= recorded(result)
        return result

    def report(
        self, name: str | None, outcome: Outcome = "success", error_code: str | None = None
    ) -> Feedback | None:
        """Which tool was used (None: none fit) and how it went. Repeating is safe; after a
        gateway call (already the report) nothing is sent."""
        if self.recorded_by_call:
            return None
        chosen = None if name is None else self.tool_name(name)
        return self._client.feedback(self.route_id, chosen, outcome, error_code)

    def none_fit(self) -> Feedback:
        """Report that none of the candidates fitted the step."""
        return self._client.feedback(self.route_id, None, "unknown")


class AsyncStep(_Routed):
    """A routed step of the async client."""

    def __init__(self, client: AsyncToolReach, answer: RouteAnswer) -> None:
        super().__init__(answer)
        self._client = client

    async def validate(
        self, name: str, arguments: dict[str, Any], *, record: bool = False
    ) -> Validation:
        """As ``Step.validate``."""
        return await self._client.validate(
            self.tool_name(name),
            arguments,
            namespace=self.namespace,
            route_id=self.route_id if record else None,
        )

    async def call(self, name: str, arguments: dict[str, Any]) -> CallResult:
        """As ``Step.call``."""
        result = await self._client.call(
            self.tool_name(name), arguments, namespace=self.namespace, route_id=self.route_id
        )
        self.recorded_by_call |= recorded(result)
        return result

    async def report(
        self, name: str | None, outcome: Outcome = "success", error_code: str | None = None
    ) -> Feedback | None:
        """As ``Step.report``."""
        if self.recorded_by_call:
            return None
        chosen = None if name is None else self.tool_name(name)
        return await self._client.feedback(self.route_id, chosen, outcome, error_code)

    async def none_fit(self) -> Feedback:
        """As ``Step.none_fit``."""
        return await self._client.feedback(self.route_id, None, "unknown")
