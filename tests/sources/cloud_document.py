"""A cloud API in the shape of DigitalOcean's public description, written here (the real one
is not on any package registry): collections and items, and resources whose actions are one
``POST /v2/<resource>/{id}/actions`` with a ``oneOf`` of bodies, each with its own ``type``
(snapshot, reboot, resize, ...). Its summaries follow that description's style ("Create a
New Droplet", "Initiate a Droplet Action"), which rarely shares a user's verb."""

from __future__ import annotations

from typing import Any

DROPLET_ACTIONS = (
    "reboot", "power_cycle", "shutdown", "power_off", "power_on", "restore", "password_reset",
    "resize", "rebuild", "rename", "change_kernel", "enable_ipv6", "enable_backups",
    "disable_backups", "snapshot",
)  # fmt: skip
VOLUME_ACTIONS = ("attach", "detach", "resize")
IMAGE_ACTIONS = ("transfer", "convert")
# (path, method, operationId, summary)
OPERATIONS = (
    ("/v2/droplets", "get", "droplets_list", "List All Droplets"),
    ("/v2/droplets", "post", "droplets_create", "Create a New Droplet"),
    ("/v2/droplets/{droplet_id}", "get", "droplets_get", "Retrieve an Existing Droplet"),
    ("/v2/droplets/{droplet_id}", "delete", "droplets_destroy", "Delete an Existing Droplet"),
    (
        "/v2/droplets/{droplet_id}/actions",
        "get",
        "dropletActions_list",
        "List Actions for a Droplet",
    ),
    (
        "/v2/droplets/{droplet_id}/actions",
        "post",
        "dropletActions_post",
        "Initiate a Droplet Action",
    ),
    (
        "/v2/droplets/{droplet_id}/snapshots",
        "get",
        "droplets_list_snapshots",
        "List Snapshots for a Droplet",
    ),
    ("/v2/volumes", "get", "volumes_list", "List All Block Storage Volumes"),
    ("/v2/volumes", "post", "volumes_create", "Create a New Block Storage Volume"),
    ("/v2/volumes/{volume_id}", "get", "volumes_get", "Retrieve an Existing Block Storage Volume"),
    ("/v2/volumes/{volume_id}", "delete", "volumes_delete", "Delete a Block Storage Volume"),
    (
        "/v2/volumes/{volume_id}/actions",
        "post",
        "volumeActions_post_byId",
        "Initiate A Block Storage Action By Volume Id",
    ),
    ("/v2/snapshots", "get", "snapshots_list", "List All Snapshots"),
    ("/v2/snapshots/{snapshot_id}", "get", "snapshots_get", "Retrieve an Existing Snapshot"),
    ("/v2/snapshots/{snapshot_id}", "delete", "snapshots_delete", "Delete a Snapshot"),
    ("/v2/images/{image_id}/actions", "post", "imageActions_post", "Initiate an Image Action"),
    ("/v2/domains", "get", "domains_list", "List All Domains"),
    ("/v2/domains", "post", "domains_create", "Create a New Domain"),
    ("/v2/domains/{domain_name}", "delete", "domains_delete", "Delete a Domain"),
    ("/v2/domains/{domain_name}/records", "get", "domains_list_records", "List All Domain Records"),
    (
        "/v2/domains/{domain_name}/records",
        "post",
        "domains_create_record",
        "Create a New Domain Record",
    ),
    (
        "/v2/domains/{domain_name}/records/{domain_record_id}",
        "patch",
        "domains_update_record",
        "Update a Domain Record",
    ),
    (
        "/v2/domains/{domain_name}/records/{domain_record_id}",
        "delete",
        "domains_delete_record",
        "Delete a Domain Record",
    ),
    ("/v2/firewalls", "get", "firewalls_list", "List All Firewalls"),
    ("/v2/firewalls", "post", "firewalls_create", "Create a New Firewall"),
    ("/v2/firewalls/{firewall_id}", "put", "firewalls_update", "Update a Firewall"),
    ("/v2/account/keys", "get", "sshKeys_list", "List All SSH Keys"),
    ("/v2/account/keys", "post", "sshKeys_create", "Create a New SSH Key"),
    ("/v2/account/keys/{ssh_key_identifier}", "delete", "sshKeys_delete", "Delete an SSH Key"),
    ("/v2/databases", "post", "databases_create_cluster", "Create a New Database Cluster"),
    ("/v2/databases", "get", "databases_list_clusters", "List All Database Clusters"),
    (
        "/v2/databases/{database_cluster_uuid}/resize",
        "put",
        "databases_update_clusterSize",
        "Resize a Database Cluster",
    ),
    (
        "/v2/kubernetes/clusters",
        "post",
        "kubernetes_create_cluster",
        "Create a New Kubernetes Cluster",
    ),
    ("/v2/kubernetes/clusters", "get", "kubernetes_list_clusters", "List All Kubernetes Clusters"),
    ("/v2/load_balancers", "post", "loadBalancers_create", "Create a New Load Balancer"),
    ("/v2/load_balancers/{lb_id}", "delete", "loadBalancers_delete", "Delete a Load Balancer"),
)
DESCRIPTIONS = {
    "droplet": "Droplets are Linux-based virtual machines (VMs) that run on top of virtualized"
    " hardware.",
    "volume": "Block storage volumes provide expanded storage capacity for Droplets.",
    "snapshot": "Snapshots are saved instances of a Droplet or a block storage volume.",
    "image": "Images are templates to create Droplets.",
    "domain": "Domain resources are domain names you manage through DigitalOcean's DNS.",
    "firewall": "Cloud firewalls control the traffic to Droplets.",
    "database": "Managed database clusters.",
    "kubernetes": "Managed Kubernetes clusters.",
}


def _typed_bodies(names: tuple[str, ...]) -> dict[str, Any]:
    bodies = [
        {
            "type": "object",
            "required": ["type"],
            "properties": {"type": {"type": "string", "enum": [name], "description": "The action"}},
        }
        for name in names
    ]
    return {"oneOf": bodies, "discriminator": {"propertyName": "type"}}


def _body(operation_id: str) -> dict[str, Any] | None:
    schema: dict[str, Any]
    if operation_id == "dropletActions_post":
        schema = _typed_bodies(DROPLET_ACTIONS)
    elif operation_id == "volumeActions_post_byId":
        schema = _typed_bodies(VOLUME_ACTIONS)
    elif operation_id == "imageActions_post":
        schema = _typed_bodies(IMAGE_ACTIONS)
    elif operation_id.endswith(("create", "create_record", "create_cluster", "update_record")):
        properties = {"name": {"type": "string"}, "region": {"type": "string"}}
        schema = {"type": "object", "properties": properties}
    else:
        return None
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def _operation(path: str, operation_id: str, summary: str) -> dict[str, Any]:
    about = next((text for key, text in DESCRIPTIONS.items() if key in path), "")
    parameters = [
        {"name": part.strip("{}"), "in": "path", "required": True, "schema": {"type": "string"}}
        for part in path.split("/")
        if part.startswith("{")
    ]
    node: dict[str, Any] = {
        "operationId": operation_id,
        "summary": summary,
        "description": about,
        "tags": [path.split("/")[2].replace("_", " ").title()],
        "parameters": parameters,
        "responses": {"200": {"description": "OK"}, "404": {"description": "Not found"}},
    }
    body = _body(operation_id)
    if body is not None:
        node["requestBody"] = body
    return node


def cloud_document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for path, method, operation_id, summary in OPERATIONS:
        paths.setdefault(path, {})[method] = _operation(path, operation_id, summary)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Cloud API in DigitalOcean's shape", "version": "2.0"},
        "servers": [{"url": "https://api.cloud.example"}],
        "paths": paths,
    }
