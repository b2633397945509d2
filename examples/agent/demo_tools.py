"""Small, deterministic implementations of some of the demo catalog's tools
(app/demo/catalog.json), so the example agent runs with no outside service. A failure
raises ``ToolFailure`` with one of the card's error codes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ORDERS = {
    "o100234": {"user_id": "u1042", "status": "shipped", "carrier": "DHL", "eta": "2026-12-04"},
    "o100999": {"user_id": "u1042", "status": "paid", "carrier": None, "eta": None},
}
PLACES = {
    "paris, fr": (12.0, "light rain"),
    "tokyo, jp": (9.5, "clear"),
    "austin, us": (24.0, "sunny"),
}
RATES = {("USD", "EUR"): 0.92, ("EUR", "USD"): 1.09, ("USD", "JPY"): 151.3, ("GBP", "EUR"): 1.17}


class ToolFailure(Exception):
    """The tool's own error: ``code`` is a row of its card's error table."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _order(order_id: str) -> dict[str, Any]:
    if order_id not in ORDERS:
        raise ToolFailure("ORDER_NOT_FOUND", f"no order {order_id}")
    return ORDERS[order_id]


def track_shipment(order_id: str, tracking_number: str | None = None) -> dict[str, Any]:
    order = _order(order_id)
    if order["carrier"] is None:
        raise ToolFailure("NOT_YET_SHIPPED", f"order {order_id} has not been handed to a carrier")
    return {"order_id": order_id, "carrier": order["carrier"], "estimated_delivery": order["eta"]}


def get_order_details(order_id: str, include_status_history: bool = False) -> dict[str, Any]:
    order = _order(order_id)
    return {"order_id": order_id, "user_id": order["user_id"], "status": order["status"]}


def list_user_orders(user_id: str, **_filters: Any) -> dict[str, Any]:
    mine = [
        {"order_id": o, "status": v["status"]} for o, v in ORDERS.items() if v["user_id"] == user_id
    ]
    if not mine:
        raise ToolFailure("USER_NOT_FOUND", f"no account {user_id}")
    return {"orders": mine}


def get_current_weather(location: str, units: str = "metric") -> dict[str, Any]:
    if location.lower() not in PLACES:
        raise ToolFailure("LOCATION_NOT_FOUND", f"no place matches {location!r}")
    celsius, conditions = PLACES[location.lower()]
    temperature = celsius if units == "metric" else round(celsius * 9 / 5 + 32, 1)
    return {"location": location, "temperature": temperature, "conditions": conditions}


def convert_currency(amount: float, from_currency: str, to_currency: str) -> dict[str, Any]:
    rate = RATES.get((from_currency, to_currency))
    if rate is None:
        raise ToolFailure("UNSUPPORTED_CURRENCY", f"no rate for {from_currency}/{to_currency}")
    return {"converted_amount": round(amount * rate, 2), "rate": rate, "to_currency": to_currency}


def search_help_center(query: str, **_filters: Any) -> dict[str, Any]:
    article = {
        "title": "When will my order ship?",
        "excerpt": "Paid orders ship within 2 business days.",
    }
    return {"articles": [article] if "ship" in query.lower() else []}


REGISTRY: dict[str, Callable[..., Any]] = {
    f.__name__: f
    for f in (
        track_shipment,
        get_order_details,
        list_user_orders,
        get_current_weather,
        convert_currency,
        search_help_center,
    )
}
