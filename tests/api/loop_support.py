"""Shared pieces of the feedback-loop tests: the tools, the viewer key, the services."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.services import Services
from tests.api.test_tools import weather_card

DASHBOARD_KEY = "test-dashboard-key-0123456789"
VIEWER = {"Authorization": f"Bearer {DASHBOARD_KEY}"}
TOOLS = [
    weather_card(),
    weather_card(
        name="get_weather_forecast",
        description="Weather forecast for the next days in a city. Not for current weather.",
    ),
    weather_card(name="send_email", description="Send an email to one address.", tags=["mail"]),
    weather_card(name="convert_currency", description="Convert money between currencies."),
]


def services_of(client: TestClient) -> Services:
    services: Services = client.app.state.services  # type: ignore[attr-defined]
    return services
