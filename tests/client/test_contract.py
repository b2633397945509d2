"""The client's models against the running service's OpenAPI document: every field the
client types is one the service defines, and every field the service requires is typed
(a new optional one arrives as an extra, so an older client keeps working)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pydantic import BaseModel
from toolreach_client import models as m

from tests.client.conftest import Service

PAIRS: list[tuple[type[BaseModel], str]] = [
    (m.RouteRequest, "RouteRequest"),
    (m.RouteAnswer, "RouteResponse"),
    (m.RouteBatchRequest, "RouteBatchRequest"),
    (m.RouteBatchAnswer, "RouteBatchResponse"),
    (m.Candidate, "RouteCandidate"),
    (m.TokenEstimate, "TokenEstimate"),
    (m.ValidateRequest, "ValidateRequest"),
    (m.Validation, "ValidateResult"),
    (m.CallProblem, "CallProblem"),
    (m.FeedbackRequest, "FeedbackRequest"),
    (m.Feedback, "FeedbackRead"),
    (m.Tool, "ToolRead"),
    (m.ErrorEntry, "ErrorEntry"),
    (m.ToolList, "ToolList"),
    (m.BulkResult, "BulkResult"),
    (m.Stats, "StatsReport"),
    # The gateway's.
    (m.CallRequest, "CallRequest"),
    (m.CallResult, "CallResult"),
    (m.CallError, "CallError"),
    (m.BatchCallResult, "BatchCallResult"),
]


@pytest.fixture(scope="module")
def schemas(service: Service) -> dict[str, Any]:
    document = httpx.get(f"{service.url}/openapi.json").json()
    found: dict[str, Any] = document["components"]["schemas"]
    return found


@pytest.mark.parametrize(("model", "name"), PAIRS, ids=[name for _, name in PAIRS])
def test_model_follows_the_openapi_schema(
    schemas: dict[str, Any], model: type[BaseModel], name: str
) -> None:
    schema = schemas[name]
    fields = set(model.model_fields)
    assert fields <= set(schema["properties"]), (
        f"{name} has no {fields - set(schema['properties'])}"
    )
    assert set(schema.get("required", [])) <= fields
