"""What an operation does, in words: its kind from its method, path and summary, its action
names from its body (the only examples the importer writes), and a summary for an operation
that has none (app/sources/openapi_verbs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from app.sources import openapi
from app.sources.documents import file_uri, load_documents, read_file
from app.sources.openapi_verbs import (
    actions,
    examples,
    kind,
    read_summary,
    resource,
    written_summary,
)
from tests.sources.cloud_document import DROPLET_ACTIONS, cloud_document


@pytest.mark.parametrize(
    ("method", "path", "summary", "expected"),
    [
        ("POST", "/folders", "Create folder", "create"),
        ("GET", "/folders/{folder_id}/items", "List items in folder", "list"),
        ("GET", "/files/{file_id}", "Get file information", "read"),
        ("PUT", "/files/{file_id}", "Update file", "change"),
        ("DELETE", "/files/{file_id}/trash", "Permanently remove file", "delete"),
        ("POST", "/chat.update", "Updates a message.", "change"),  # RPC: the summary says
        ("POST", "/chat.delete", "Deletes a message.", "delete"),
        ("POST", "/folders/{folder_id}", "Restore folder", "restore"),
        ("POST", "/files/{file_id}/copy", "Copy file", "copy"),
        ("GET", "/authorize", "Authorize user", None),  # its own verb: no guess
        ("POST", "/conversations.kick", "Removes a user from a conversation.", "delete"),
        ("DELETE", "/things/{id}", "", "delete"),  # no summary: the method and path
        ("GET", "/things", "", "list"),
        ("GET", "/things/{id}", "", "read"),
        ("POST", "/things", "", None),  # a POST alone is as often an action
    ],
)
def test_kind(method: str, path: str, summary: str, expected: str | None) -> None:
    assert kind(method, path, summary) == expected


def test_summary_and_resource_words() -> None:
    assert read_summary("Permanently remove file") == ("delete", "file")
    assert read_summary("Create a New Droplet") == ("create", "Droplet")
    assert resource("/v2/droplets/{droplet_id}/actions") == "droplet"
    assert resource("/admin.conversations.search") == "conversation"
    assert resource("/v2/load_balancers") == "load balancer"
    assert resource("/policies/{id}") == "policy"


def test_the_action_names_of_a_typed_body() -> None:
    one_of = {"oneOf": [{"properties": {"type": {"enum": [n]}}} for n in ("reboot", "resize")]}
    assert actions({"properties": {"body": one_of}}) == ["reboot", "resize"]
    flat = {"properties": {"type": {"type": "string", "enum": ["attach", "detach"]}}}
    assert actions(flat) == ["attach", "detach"]
    assert actions({"properties": {"type": {"enum": ["folder"]}}}) == []  # what, not how
    assert actions(
        {
            "properties": {
                "body": {
                    "oneOf": [
                        {"properties": {"type": {"const": "a"}}},
                        {"properties": {"type": {"const": "b"}}},
                    ]
                }
            }
        }
    ) == ["a", "b"]


def test_no_verbs_are_invented() -> None:
    """Examples are what the document declares: no "spin up a droplet" from POST /droplets."""
    assert examples("/v2/droplets", {}) == []
    flat = {"properties": {"type": {"type": "string", "enum": ["attach", "detach"]}}}
    assert examples("/v2/volumes/{id}/actions", flat) == ["attach the volume", "detach the volume"]


@pytest.mark.parametrize(
    ("method", "path", "operation_id", "expected"),
    [
        ("POST", "/v1/Services/{ServiceSid}/AlphaSenders", "CreateAlphaSender",
         "Create an alpha sender for the service"),
        ("GET", "/v1/Services/{ServiceSid}/AlphaSenders", "ListAlphaSender",
         "List alpha senders of the service"),
        ("GET", "/v1/Services/{ServiceSid}/AlphaSenders/{Sid}", "FetchAlphaSender",
         "Fetch an alpha sender of the service"),
        ("POST", "/v1/Services/{Sid}", "UpdateService", "Update a service"),
        ("POST", "/2010-04-01/Accounts/{AccountSid}/Addresses.json", "",
         "Create an address for the account"),
        ("GET", "/things/{id}", "", "Get a thing"),
        ("POST", "/things/{id}", "", ""),  # a POST on an item: an update or an action
        ("POST", "/v1/things/{id}", "frobnicate_thing", ""),  # not a verb we know
    ],
)  # fmt: skip
def test_a_summary_written_where_there_is_none(
    method: str, path: str, operation_id: str, expected: str
) -> None:
    assert written_summary(method, path, operation_id) == expected


def test_an_operation_without_text_gets_a_written_summary(tmp_path: Path) -> None:
    document = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {
            "/v1/Services/{ServiceSid}/AlphaSenders": {
                "post": {
                    "operationId": "CreateAlphaSender",
                    "parameters": [{"name": "ServiceSid", "in": "path", "required": True,
                                    "schema": {"type": "string"}}],
                    "responses": {"201": {"description": "created"}},
                }
            }
        },
    }  # fmt: skip
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(document))
    documents = anyio.run(load_documents, file_uri(path), read_file)
    [(card, _)] = openapi.convert(documents, openapi.Options("default", "s")).cards
    assert card.summary == "Create an alpha sender for the service"
    assert card.examples == []


def test_an_action_endpoint_card_names_its_actions(tmp_path: Path) -> None:
    """POST /v2/droplets/{id}/actions, a oneOf of bodies each with its own type."""
    path = tmp_path / "cloud.json"
    path.write_text(json.dumps(cloud_document()))
    documents = anyio.run(load_documents, file_uri(path), read_file)
    cards = {
        c.name: c for c, _ in openapi.convert(documents, openapi.Options("default", "s")).cards
    }
    card = cards["dropletActions_post"]
    assert card.examples[: len(DROPLET_ACTIONS)] == [
        f"{name.replace('_', ' ')} the droplet" for name in DROPLET_ACTIONS
    ]
    assert "snapshot the droplet" in card.examples
    assert "attach the volume" in cards["volumeActions_post_byId"].examples
    assert all(len(c.examples) <= 50 for c in cards.values())
