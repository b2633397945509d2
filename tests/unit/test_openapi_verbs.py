"""What an operation does, said as a user would: its kind from its method, path and summary,
its action names from its body, and the examples the importer writes on its card
(app/sources/openapi_verbs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from app.sources import openapi
from app.sources.documents import file_uri, load_documents, read_file
from app.sources.openapi_verbs import actions, examples, kind, read_summary, resource
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


def test_examples_in_the_kinds_verbs() -> None:
    found = examples("POST", "/v2/droplets", "Create a New Droplet", {})
    assert found[0] == "create a New Droplet"  # the summary itself first
    assert {"provision a Droplet", "spin up a Droplet", "add a Droplet"} <= set(found)
    assert "add an emoji" in examples("POST", "/emoji.add", "Add an emoji.", {})
    assert examples("GET", "/authorize", "Authorize user", {}) == ["authorize user"]


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
