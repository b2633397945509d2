"""OpenAPI documents as they ship: several hundred files, bounded by settings; problems that
say where they are; a missing file is the caller's 422; a re-sync counts what it left."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from fastapi.testclient import TestClient

from app.sources.documents import (
    DocumentError,
    DocumentLimits,
    DocumentMissing,
    file_uri,
    load_documents,
    read_file,
)
from app.sources.openapi_check import problems
from tests.conftest import ADMIN, empty_database
from tests.sources.conftest import app_client
from tests.sources.multifile import write_document


@pytest.fixture(scope="module")
def many_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_document(tmp_path_factory.mktemp("many"))


@pytest.fixture
def any_db(database_url: str) -> Iterator[TestClient]:
    empty_database(database_url)
    with app_client(database_url) as client:
        yield client


def add(client: TestClient, path: Path, **extra: object) -> tuple[int, dict]:
    body = {"name": "many", "kind": "openapi", "path": str(path), **extra}
    response = client.post("/v1/sources", json=body, headers=ADMIN)
    return response.status_code, response.json()


def test_hundreds_of_files_register_as_shipped(any_db: TestClient, many_files: Path) -> None:
    """675 operations in 987 files, each operation a file of its own, every $ref read from
    the file it is in: refused on the old bound of 50 documents."""
    assert sum(1 for _ in many_files.parent.rglob("*.y*ml")) == 987
    status, report = add(any_db, many_files)
    assert status == 201, report
    assert report["tools"] == 675 and len(report["created"]) == 675 and report["refused"] == []
    card = any_db.get("/v1/tools/things007_get", headers=ADMIN).json()
    assert card["parameters"]["properties"]["id"] == {"type": "integer", "minimum": 1}
    codes = {e["code"] for e in card["errors"]}
    assert codes == {"401", "404", "429", "500"}  # ../../shared/responses/*.yml
    assert card["returns"]["properties"]["region"]["enum"] == ["nyc1", "ams3", "sfo3"]
    # An operation in a file of its own is not strict OpenAPI: said, with where.
    assert report["problems"][0].startswith("openapi.yaml#/paths/~1v2~1things000/get: ")
    again = any_db.post("/v1/sources/many/sync", headers=ADMIN).json()
    assert again["status"] == "unchanged" and again["unchanged"] == 675  # was 0
    assert again["tools"] == 675


@pytest.mark.parametrize(
    ("limits", "said"),
    [
        (DocumentLimits(max_documents=900), "more than 900 documents (TOOLREACH_SOURCE_MAX_DOC"),
        (
            DocumentLimits(max_bytes=200_000),
            "than 200000 bytes in all (TOOLREACH_SOURCE_MAX_BYTES)",
        ),
        (
            DocumentLimits(max_depth=2),
            "more than 2 $ref hops from the root document (TOOLREACH_SOU",
        ),
        (DocumentLimits(seconds=0.05), "took longer than 0.05 s (TOOLREACH_SOURCE_READ_SECONDS)"),
    ],
)
def test_each_bound_names_its_setting(many_files: Path, limits: DocumentLimits, said: str) -> None:
    with pytest.raises(DocumentError) as refused:
        anyio.run(load_documents, file_uri(many_files), read_file, limits)
    assert said in str(refused.value)


def test_the_defaults_take_it_and_the_setting_is_read(sqlite_db: str, many_files: Path) -> None:
    documents = anyio.run(load_documents, file_uri(many_files), read_file, DocumentLimits())
    assert len(documents.by_uri) == 987
    with app_client(sqlite_db, source_max_documents=100) as client:
        status, report = add(client, many_files)
    assert status == 502 and "more than 100 documents" in report["error"]["message"]


def test_a_missing_file_is_the_callers_422_naming_it(gw: TestClient, tmp_path: Path) -> None:
    status, answer = add(gw, tmp_path / "nowhere.yaml")
    assert status == 422 and answer["error"]["code"] == "invalid_input"
    assert f"{tmp_path / 'nowhere.yaml'}: no such file" in answer["error"]["message"]
    root = write_document(tmp_path / "doc", resources=2)
    (tmp_path / "doc" / "resources" / "things001" / "models" / "things001.yml").unlink()
    status, answer = add(gw, root)
    assert status == 422, answer
    message = answer["error"]["message"]
    assert "resources/things001/models/things001.yml: no such file, named by" in message
    assert re.search(r"things001_\w+\.yml \(\$ref 'models/things001\.yml'\)", message)
    assert gw.get("/v1/sources", headers=ADMIN).json()["total"] == 0  # nothing stored


def test_a_missing_file_in_a_ref_is_missing_not_unreadable(tmp_path: Path) -> None:
    (tmp_path / "api.yaml").write_text("openapi: 3.0.0\nx: {$ref: 'gone.yaml#/A'}\n")
    with pytest.raises(DocumentMissing, match=r"gone.yaml: no such file, named by .*api.yaml"):
        anyio.run(load_documents, file_uri(tmp_path / "api.yaml"), read_file)


BROKEN = {
    "api.yaml": """openapi: 3.0.3
info: {title: t, version: "1"}
servers: [{url: "https://t.example"}]
paths:
  /a:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: "schemas/thing.yaml#/Thing"}
  /b: {$ref: "paths/b.yaml"}
  /c:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
""",
    "schemas/thing.yaml": "Thing:\n  type: object\n  properties:\n    other:\n",
    "paths/b.yaml": """get:
  parameters:
    - {name: q, in: query, schema: {type: integer, minimum: "x"}}
  responses:
    "200": {description: ok}
""",
}


def test_a_problem_says_which_file_and_where_in_it(tmp_path: Path) -> None:
    for name, text in BROKEN.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    documents = anyio.run(load_documents, file_uri(tmp_path / "api.yaml"), read_file)
    found = problems(documents, "3.0.3")
    assert not any("(document)" in problem for problem in found), found
    assert (
        "api.yaml#/paths/~1c/get/responses/200/content/application~1json/schema: "
        "None is not of type 'object', 'boolean'" in found
    )
    assert (
        "paths/b.yaml#/get/parameters/0/schema/minimum (reached from "
        "#/paths/~1b/get/parameters/0/schema/minimum): 'x' is not of type 'number'" in found
    )
    assert any(
        p.startswith("schemas/thing.yaml#/Thing/properties/other (reached from") for p in found
    )


def test_the_documents_own_servers_are_checked_at_registration(
    sqlite_db: str, tmp_path: Path
) -> None:
    """Before, a document whose servers are a metadata address registered (201); only the
    call was refused."""
    for server in (
        "http://169.254.169.254/latest",
        "http://[fd00:ec2::254]/",
        "http://100.100.100.200/",
    ):
        document = {
            "openapi": "3.0.3",
            "info": {"title": "t", "version": "1"},
            "servers": [{"url": server}],
            "paths": {
                "/x": {"get": {"operationId": "x", "responses": {"200": {"description": "ok"}}}}
            },
        }
        path = tmp_path / "doc.json"
        path.write_text(json.dumps(document))
        with app_client(sqlite_db, outbound_allowed_networks=()) as client:
            status, answer = add(client, path)
            assert status == 502, answer
            assert f"the document's server {server.rstrip('/')}" in answer["error"]["message"]
            assert client.get("/v1/sources", headers=ADMIN).json()["total"] == 0
    document["servers"] = [{"url": "https://api.example.com"}]  # a name that does not resolve
    path.write_text(json.dumps(document))  # here: checked again at each connection
    with app_client(sqlite_db, outbound_allowed_networks=()) as client:
        assert add(client, path)[0] == 201
