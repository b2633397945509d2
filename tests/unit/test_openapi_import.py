"""OpenAPI documents become cards: the two real documents, a multi-file one, and refusals."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest

from app.sources import openapi
from app.sources.binding import BodyFields, HttpBinding, stored
from app.sources.documents import DocumentError, Documents, file_uri, load_documents, read_file
from app.sources.fetch import _convert
from registry.json_schema import check_schema
from tests.shared_data import shared_file

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
BOX = ("openapi", "box-platform.openapi.json")
SLACK = ("openapi", "slack-web.swagger.json")


def load(path: Path) -> Documents:
    return anyio.run(load_documents, file_uri(path), read_file)


def options(**extra: object) -> openapi.Options:
    return openapi.Options(namespace="default", source="src", **extra)  # type: ignore[arg-type]


def convert(path: Path, **extra: object) -> openapi.Converted:
    return openapi.convert(load(path), options(**extra))


@pytest.fixture(scope="module")
def box() -> tuple[openapi.Converted, float]:
    box = shared_file(*BOX)
    started = time.perf_counter()
    snapshot = _convert(load(box), options(), strict=True)  # valid: strict passes
    result = openapi.Converted("3.0.2", 296, snapshot.cards, snapshot.refused, snapshot.notes)
    return result, time.perf_counter() - started


def test_box_every_operation_is_a_card(box: tuple[openapi.Converted, float]) -> None:
    converted, seconds = box
    assert len(converted.cards) == 296  # 294 + its 2 OPTIONS operations
    assert converted.refused == []
    assert seconds < 30
    names = [card.name for card, _ in converted.cards]
    assert len(set(names)) == len(names)
    for card, _ in converted.cards:  # the registry's own bounds hold for every schema
        check_schema(card.parameters, require_object=True)
        assert len(json.dumps(card.parameters)) <= 64 * 1024


def test_box_card_shape(box: tuple[openapi.Converted, float]) -> None:
    converted, _ = box
    card, binding = next((c, b) for c, b in converted.cards if c.name == "get_files_id")
    assert card.summary == "Get file information"
    assert card.parameters["required"][0] == "file_id"
    assert "fields" in card.parameters["properties"]  # a query parameter
    assert card.returns is not None and card.returns["type"] == "object"
    codes = {e.code: e for e in card.errors}
    assert "404" in codes and codes["404"].suggestion
    assert card.tags == ["Files"]
    assert card.source is not None and card.source.ref == "GET /files/{file_id}"
    assert binding.server == "https://api.box.com/2.0" and binding.safe is True
    upload = next(b for c, b in converted.cards if c.name == "post_files_content")
    assert upload.server == "https://upload.box.com/api/2.0"  # the operation's own server


def test_slack_swagger_2_with_its_problems() -> None:
    documents = load(shared_file(*SLACK))
    snapshot = _convert(documents, options(supplied=frozenset({("header", "token")})), strict=False)
    assert len(snapshot.cards) == 174 and snapshot.refused == []
    assert len(snapshot.problems) > 0  # the validator's findings are reported, not fatal
    card, binding = next((c, b) for c, b in snapshot.cards if c.name == "chat_postMessage")
    assert "token" not in card.parameters["properties"]  # the source's credentials send it
    assert card.parameters["required"] == ["channel"]
    assert isinstance(binding, HttpBinding) and binding.body is not None
    assert binding.body.media == "application/x-www-form-urlencoded"
    assert binding.server == "https://slack.com/api"
    with pytest.raises(DocumentError, match="invalid"):
        _convert(documents, options(), strict=True)


def test_multi_file_document() -> None:
    converted = convert(DATA / "openapi_multi" / "api.yaml", prefix="kennel.")
    cards = {card.name: (card, binding) for card, binding in converted.cards}
    assert set(cards) == {"kennel.getDog", "kennel.replaceDog", "kennel.get_dogs"}
    dog, binding = cards["kennel.getDog"]
    assert dog.parameters["properties"]["dogId"]["pattern"] == "^[a-z0-9-]+$"
    assert stored(binding)["params"][0] == {  # as stored
        "arg": "dogId", "in": "path", "name": "dogId", "style": None, "explode": None,
        "collection": None,
    }  # fmt: skip
    parents = dog.returns["properties"]["parents"]["items"]  # type: ignore[index]
    assert "recursive" in parents["description"]  # the cycle is cut, its type kept
    assert parents["type"] == "object"
    assert dog.errors[0].code == "404" and dog.errors[0].meaning == "No dog has this id"
    replace, body = cards["kennel.replaceDog"]
    assert set(replace.parameters["required"]) == {"dogId", "name"}  # body fields flattened
    assert body.body == BodyFields(media="application/json", fields=("name", "breed", "parents"))
    listing, params = cards["kennel.get_dogs"]
    assert listing.parameters["properties"]["limit"]["maximum"] == 100
    assert [p.place for p in params.params] == ["query", "header"]


def test_refs_outside_the_folder_are_refused(tmp_path: Path) -> None:
    inner = tmp_path / "api"
    inner.mkdir()
    (tmp_path / "secret.yaml").write_text("Thing: {type: string}\n")
    (inner / "api.yaml").write_text(
        "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n  /x:\n    get:\n"
        "      responses:\n        '200':\n          description: ok\n          content:\n"
        "            application/json:\n              schema: {$ref: '../secret.yaml#/Thing'}\n"
    )
    with pytest.raises(DocumentError, match="outside the document's folder"):
        load(inner / "api.yaml")


def test_yaml_aliases_are_refused(tmp_path: Path) -> None:
    (tmp_path / "bomb.yaml").write_text("a: &a [1, 2]\nb: [*a, *a]\n")
    with pytest.raises(DocumentError, match="aliases"):
        load(tmp_path / "bomb.yaml")


def test_schemas_cut_short_until_the_registry_takes_them(tmp_path: Path) -> None:
    """A pattern RE2 cannot run is refused by the registry: the card is kept without it."""
    document = {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://t.example"}],
        "paths": {
            "/a": {
                "get": {
                    "operationId": "lookahead",
                    "parameters": [
                        {
                            "name": "q",
                            "in": "query",
                            "schema": {"type": "string", "pattern": "^(?=a)a$"},
                        }
                    ],
                    "responses": {"200": {"description": "ok"}},
                },
                "post": {
                    "operationId": "odd_body",
                    "requestBody": {"content": {"image/png": {"schema": {"type": "string"}}}},
                    "responses": {"200": {"description": "ok"}},
                },
            }
        },
    }
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(document))
    converted = convert(path)
    [(card, _)] = converted.cards
    assert card.name == "lookahead" and "pattern" not in card.parameters["properties"]["q"]
    assert converted.refused == [
        {
            "operation": "POST /a",
            "name": "odd_body",
            "reason": "a request body only in image/png, which the gateway cannot send",
        }
    ]


def test_not_openapi(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"hello": "world"}')
    with pytest.raises(DocumentError, match="not an OpenAPI"):
        convert(path)
