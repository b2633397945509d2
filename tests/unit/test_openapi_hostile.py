"""Documents built to make conversion explode: the work stays bounded by what a card may
hold, however the ``$ref``s multiply (app/sources/openapi_schema.py, "Budget").

The first is issue 27's probe exactly: five schemas of 150 properties, each a ``$ref`` to the
next (27 KB), which took 91 s and 2.6 GB to register before the budget."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
import pytest

from app.sources import openapi
from app.sources.documents import DocumentError, file_uri, load_documents, read_file
from registry.json_schema import MAX_SCHEMA_BYTES, check_schema

MIB = 1024 * 1024


def _document(schemas: dict[str, Any], root: str = "S0") -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{root}"}
    return {
        "openapi": "3.0.3",
        "info": {"title": "hostile", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {
            "/things": {
                "post": {
                    "operationId": "make_thing",
                    "requestBody": {"content": {"application/json": {"schema": ref}}},
                    "responses": {
                        "200": {
                            "description": "ok",
                            "content": {"application/json": {"schema": ref}},
                        }
                    },
                },
                "get": {
                    "operationId": "find_things",
                    "parameters": [
                        {
                            "name": "q",
                            "in": "query",
                            "content": {"application/json": {"schema": ref}},
                        }
                    ],
                    "responses": {"200": {"description": "ok"}},
                },
            }
        },
        "components": {"schemas": schemas},
    }


def fan_out(width: int = 150, levels: int = 5) -> dict[str, Any]:
    """Issue 27's probe: each schema has ``width`` properties, each a $ref to the next."""
    schemas: dict[str, Any] = {
        f"S{i}": {
            "type": "object",
            "properties": {
                f"p{j}": {"$ref": f"#/components/schemas/S{i + 1}"} for j in range(width)
            },
        }
        for i in range(levels - 1)
    }
    schemas[f"S{levels - 1}"] = {
        "type": "object",
        "properties": {f"p{j}": {"type": "string"} for j in range(width)},
    }
    return _document(schemas)


def combined(keyword: str, width: int = 150, levels: int = 5) -> dict[str, Any]:
    """The same fan-out through allOf / oneOf / anyOf lists, or array items."""
    schemas: dict[str, Any] = {}
    for i in range(levels):
        nxt = {"$ref": f"#/components/schemas/S{i + 1}"} if i < levels - 1 else {"type": "string"}
        if keyword == "items":
            props = {f"p{j}": {"type": "array", "items": nxt} for j in range(width)}
            schemas[f"S{i}"] = {"type": "object", "properties": props}
        else:
            schemas[f"S{i}"] = {keyword: [dict(nxt, description=f"v{j}") for j in range(width)]}
    return _document(schemas)


def deep_chain(length: int = 400) -> dict[str, Any]:
    schemas = {
        f"S{i}": {
            "type": "object",
            "properties": {"next": {"$ref": f"#/components/schemas/S{i + 1}"}},
        }
        for i in range(length)
    }
    schemas[f"S{length}"] = {"type": "string"}
    return _document(schemas)


def self_references() -> dict[str, Any]:
    """A node whose every property is the node itself, and two that hold each other."""
    me = {"$ref": "#/components/schemas/S0"}
    other = {"$ref": "#/components/schemas/S1"}
    return _document(
        {
            "S0": {
                "type": "object",
                "properties": {**{f"p{j}": me for j in range(150)}, "o": other},
            },
            "S1": {"type": "object", "properties": {f"q{j}": me for j in range(150)}},
        }
    )


CASES = {
    "fan_out_150x5": fan_out,
    "fan_out_400x4": lambda: fan_out(400, 4),
    "allOf": lambda: combined("allOf"),
    "oneOf": lambda: combined("oneOf"),
    "anyOf": lambda: combined("anyOf"),
    "items": lambda: combined("items"),
    "deep_chain": deep_chain,
    "self_references": self_references,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_conversion_is_bounded_by_what_it_produces(case: str, tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(CASES[case](), separators=(",", ":")))
    documents = anyio.run(load_documents, file_uri(path), read_file)
    tracemalloc.start()
    started = time.perf_counter()
    converted = openapi.convert(documents, openapi.Options(namespace="default", source="s"))
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert seconds < 20, seconds  # 91 s before for the first; about 0.3 s now on 2 cores
    assert peak < 64 * MIB, peak / MIB  # 2.6 GB before
    assert converted.refused == [] and len(converted.cards) == 2
    for card, _ in converted.cards:  # a card, whole, in the registry's bounds
        for schema in (card.parameters, card.returns):
            if schema is not None:
                check_schema(schema, require_object=False)
                assert len(json.dumps(schema, separators=(",", ":"))) <= MAX_SCHEMA_BYTES


def test_the_probe_keeps_every_property_cut_to_its_type(tmp_path: Path) -> None:
    """What the fan-out becomes: all 150 properties, each a stub of S1 that says so."""
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(fan_out()))
    assert 25_000 < path.stat().st_size < 40_000  # issue 27's 27 KB document, as JSON
    documents = anyio.run(load_documents, file_uri(path), read_file)
    converted = openapi.convert(documents, openapi.Options(namespace="default", source="s"))
    card = next(card for card, _ in converted.cards if card.name == "make_thing")
    properties = card.parameters["properties"]
    assert len(properties) == 150
    assert properties["p0"]["type"] == "object"
    assert "details left out" in properties["p0"]["description"]


def test_many_operations_each_inlining_a_large_schema_are_bounded_in_all(
    tmp_path: Path,
) -> None:
    """Each card is in the registry's bounds; 400 of them from a 100 KB document would be
    24 MB of schemas: the cards of one document are bounded in all, as they are made."""
    big = {
        "type": "object",
        "properties": {
            f"field{j}": {"type": "string", "description": "x" * 150} for j in range(300)
        },
    }  # about 60 KB as JSON
    document = _document({"Big": big}, root="Big")
    operation = document["paths"]["/things"]["post"]
    document["paths"] = {
        f"/things{i}": {"post": {**operation, "operationId": f"make{i}"}} for i in range(400)
    }
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(document))
    assert path.stat().st_size < 200_000
    documents = anyio.run(load_documents, file_uri(path), read_file)
    options = openapi.Options(namespace="default", source="s")
    tracemalloc.start()
    with pytest.raises(
        DocumentError, match=r"larger than 5000000 bytes in all \(TOOLREACH_SOURCE_MAX_CARD_BYTES\)"
    ):
        openapi.convert(documents, options, max_card_bytes=5_000_000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 64 * MIB, peak / MIB
    assert len(openapi.convert(documents, options).cards) == 400  # the default takes it
