"""A multi-file OpenAPI document of several hundred files, written by the tests, laid out as
large public API descriptions ship theirs (DigitalOcean's, for one): a root file whose
operations are each a ``$ref`` to a file of their own under ``resources/<name>/``, and whose
parameters, models and responses sit in files beside them or in ``shared/``, each ``$ref``
read from the file it is in (``../../shared/responses/not_found.yml``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

RESOURCES = 75  # 9 operations each: 675 operations in 987 files
ACTIONS = ("reboot", "power_off", "power_on", "snapshot", "resize", "rename")
SHARED_RESPONSES = ("unauthorized", "not_found", "too_many_requests", "server_error")


def _write(root: Path, relative: str, content: Any) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's: 3,000 files in seconds
    path.write_text(yaml.dump(content, Dumper=dumper, sort_keys=False))


def _errors(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    codes = {"401": "unauthorized", "404": "not_found", "429": "too_many_requests"}
    shared = {code: {"$ref": f"../../shared/responses/{name}.yml"} for code, name in codes.items()}
    return {**(extra or {}), **shared, "500": {"$ref": "../../shared/responses/server_error.yml"}}


def _operations(name: str) -> dict[str, dict[str, Any]]:
    """The nine operations of one resource, each the content of its own file."""
    thing = {"$ref": f"models/{name}.yml"}
    body = {"required": True, "content": {"application/json": {"schema": thing}}}
    one = {"200": {"$ref": f"responses/{name}.yml"}}
    page = [{"$ref": "../../shared/parameters.yml#/per_page"}]
    item = [{"$ref": "parameters.yml#/id"}]
    actions = {
        "oneOf": [{"$ref": f"models/{name}_actions.yml#/{action}"} for action in ACTIONS],
        "discriminator": {"propertyName": "type"},
    }
    operation = {
        "list": ("List all", page, None, one),
        "create": ("Create a new", [], body, {"201": {"$ref": f"responses/{name}.yml"}}),
        "get": ("Retrieve an existing", item, None, one),
        "update": ("Update an existing", item, body, one),
        "patch": ("Patch an existing", item, body, one),
        "delete": ("Delete an existing", item, None, {"204": {"description": "Deleted"}}),
        "actions_list": ("List the actions of an existing", [*item, *page], None, one),
        "actions_post": (
            "Initiate an action on an existing",
            item,
            {"required": True, "content": {"application/json": {"schema": actions}}},
            {"201": {"$ref": "../../shared/responses/action.yml"}},
        ),
        "tags_get": ("Read the tags of an existing", item, None, one),
    }
    return {
        key: {
            "operationId": f"{name}_{key}",
            "summary": f"{words} {name}",
            "tags": [name],
            "parameters": parameters,
            **({"requestBody": request} if request else {}),
            "responses": _errors(responses),
        }
        for key, (words, parameters, request, responses) in operation.items()
    }


def _resource(root: Path, name: str) -> dict[str, Any]:
    """Write one resource's files; its path items for the root document."""
    folder = f"resources/{name}"
    for key, content in _operations(name).items():
        _write(root, f"{folder}/{name}_{key}.yml", content)
    _write(root, f"{folder}/parameters.yml", {"id": _id_parameter()})
    _write(root, f"{folder}/models/{name}.yml", _model(name))
    _write(root, f"{folder}/models/{name}_actions.yml", _actions())
    _write(
        root,
        f"{folder}/responses/{name}.yml",
        {
            "description": f"The {name}",
            "content": {"application/json": {"schema": {"$ref": f"../models/{name}.yml"}}},
        },
    )
    ref = {key: {"$ref": f"{folder}/{name}_{key}.yml"} for key in _operations(name)}
    return {
        f"/v2/{name}": {"get": ref["list"], "post": ref["create"]},
        f"/v2/{name}/{{id}}": {
            "get": ref["get"],
            "put": ref["update"],
            "patch": ref["patch"],
            "delete": ref["delete"],
        },
        f"/v2/{name}/{{id}}/actions": {"get": ref["actions_list"], "post": ref["actions_post"]},
        f"/v2/{name}/{{id}}/tags": {"get": ref["tags_get"]},
    }


def _id_parameter() -> dict[str, Any]:
    return {
        "name": "id",
        "in": "path",
        "required": True,
        "schema": {"$ref": "../../shared/attributes.yml#/id"},
    }


def _actions() -> dict[str, Any]:
    return {
        action: {
            "type": "object",
            "required": ["type"],
            "properties": {"type": {"type": "string", "enum": [action]}},
        }
        for action in ACTIONS
    }


def _model(name: str) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["name"],
        "properties": {
            "id": {"$ref": "../../../shared/attributes.yml#/id"},
            "name": {"type": "string", "description": f"The {name}'s name"},
            "region": {"$ref": "../../../shared/models/region.yml"},
            "links": {"$ref": "../../../shared/models/links.yml"},
        },
    }


def write_document(
    root: Path,
    resources: int = RESOURCES,
    extra_paths: dict[str, Any] | None = None,
    servers: list[dict[str, Any]] | None = None,
) -> Path:
    """Write the document under ``root``; its root file. ``extra_paths``: path items added to
    the root document's; ``servers``: its servers (one literal URL if not given)."""
    paths: dict[str, Any] = {}
    for index in range(resources):
        paths.update(_resource(root, f"things{index:03d}"))
    for name in SHARED_RESPONSES:
        error = {"$ref": "../models/error.yml"}
        content = {"application/json": {"schema": error}}
        _write(root, f"shared/responses/{name}.yml", {"description": name, "content": content})
    action = {"$ref": "../models/action.yml"}
    response = {"description": "The action", "content": {"application/json": {"schema": action}}}
    _write(root, "shared/responses/action.yml", response)
    _write(root, "shared/parameters.yml", {"per_page": _per_page()})
    _write(root, "shared/attributes.yml", {"id": {"type": "integer", "minimum": 1}})
    _write(
        root,
        "shared/models/error.yml",
        {"type": "object", "properties": {"id": {"type": "string"}, "message": {"type": "string"}}},
    )
    _write(root, "shared/models/region.yml", {"type": "string", "enum": ["nyc1", "ams3", "sfo3"]})
    _write(
        root,
        "shared/models/links.yml",
        {"type": "object", "properties": {"pages": {"$ref": "links.yml"}}},
    )
    _write(
        root,
        "shared/models/action.yml",
        {
            "type": "object",
            "properties": {"id": {"$ref": "../attributes.yml#/id"}, "status": {"type": "string"}},
        },
    )
    document = {
        "openapi": "3.0.3",
        "info": {"title": "Many files", "version": "2.0"},
        "servers": servers or [{"url": "https://api.things.example"}],
        "paths": {**paths, **(extra_paths or {})},
    }
    _write(root, "openapi.yaml", document)
    return root / "openapi.yaml"


def _per_page() -> dict[str, Any]:
    schema = {"type": "integer", "minimum": 1, "maximum": 200, "default": 20}
    return {"name": "per_page", "in": "query", "schema": schema}


AGENT_CHAT = "The agent's own endpoint: its URL is the `url` field of GET /v2/agents/{uuid}."


def _agent_operation(name: str, servers: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "post": {
            "operationId": name,
            "summary": f"{name.replace('_', ' ').capitalize()} with a deployed agent",
            "servers": servers,
            "parameters": [{"name": "uuid", "in": "path", "required": True, "schema": {}}],
            "responses": {"200": {"description": "The agent's answer"}},
        }
    }


def _get(name: str, **extra: Any) -> dict[str, Any]:
    answer = {"200": {"description": "ok"}}
    return {"get": {"operationId": name, "summary": name, "responses": answer}, **extra}


SHIPPED_PATHS: dict[str, Any] = {
    # A server that is a template whose variable has no default (DigitalOcean's agents).
    "/v2/agents/{uuid}/chat": _agent_operation(
        "agent_chat",
        [{"url": "https://{agent_url}", "variables": {"agent_url": {"description": AGENT_CHAT}}}],
    ),
    # A server with no host: "the URL comes from another call's answer".
    "/v2/agents/{uuid}/completions": _agent_operation(
        "agent_completions", [{"url": "https://", "description": AGENT_CHAT}]
    ),
    # An operation's own server, its variables at their defaults.
    "/v2/zones/status": {
        "get": {
            **_get("zone_status")["get"],
            "servers": [
                {
                    "url": "https://{zone}.status.things.example:{port}",
                    "variables": {
                        "zone": {"default": "eu1", "enum": ["eu1", "us1"]},
                        "port": {"default": "8443"},
                    },
                }
            ],
        }
    },
    # A path item's servers, for every operation under it.
    "/v2/uploads": _get("uploads_list", servers=[{"url": "https://uploads.things.example/"}]),
    # A server relative to where the document was read.
    "/v2/health": {"get": {**_get("health")["get"], "servers": [{"url": "/health-api"}]}},
}
# The root's servers: variables at their defaults.
SHIPPED_SERVERS = [
    {
        "url": "https://{region}.api.things.example/{base}",
        "variables": {
            "region": {"default": "nyc", "enum": ["nyc", "ams"]},
            "base": {"default": ""},
        },
    }
]


def shipped_document(root: Path, resources: int = 230) -> Path:
    """A description of a few thousand files (230 resources: 2,070 operations in 3,002 files)
    with what real ones ship: templated servers, one with no host, path-item and relative
    servers."""
    return write_document(root, resources, SHIPPED_PATHS, SHIPPED_SERVERS)
