"""The plan of the house (docs/ARCHITECTURE.md), enforced: what each room may import, no
import loops between rooms, one place that commits, and a registry without a web framework.

Imports are read from the source (every ``import`` and ``from ... import``, including those
inside functions and under ``TYPE_CHECKING``), so a rule cannot be dodged by importing late.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Each room of app/ (a package, or a top-level module) and the rooms it may import.
ROOMS = {
    "routing", "registry", "embedding", "keys", "tools", "loop", "route", "sources", "gateway",
    "cli", "api", "mcp",
    "dashboard", "settings", "db", "models", "metrics", "migrate", "errors", "schemas",
    "services", "deps", "main", "db_health", "capacity", "limits", "advice", "learning",
}  # fmt: skip
ASSEMBLY = {"services", "deps", "main"}  # builds the parts in the lifespan, serves them
MAY_IMPORT: dict[str, set[str]] = {
    "routing": set(),  # the pure ranking core: nothing of the service
    "registry": set(),  # what a tool is: nothing of the service
    "embedding": {"routing"},
    "keys": {"registry", "db", "schemas", "settings", "errors"},
    "tools": {"routing", "registry", "embedding", "db", "keys"},
    "loop": {"routing", "registry", "db", "schemas", "tools", "errors", "keys"},
    "sources": {"registry", "embedding", "tools", "db", "settings", "errors"},
    "gateway": {
        "registry",
        "sources",
        "tools",
        "loop",
        "db",
        "schemas",
        "metrics",
        "settings",
        "errors",
    },
    "route": {"routing", "registry", "embedding", "tools", "loop", "learning", "schemas", "errors"},
    # Learning from reports: the guarded adapter per namespace, trained, stored and served.
    "learning": {"routing", "registry", "embedding", "tools", "loop", "db", "errors"},
    "limits": {"registry", "db", "settings", "errors"},  # counted in memory, shared by the db
    # The card doctor: advice from reported steps, replayed on a shadow index; its room reads
    # the reports in one short transaction of its own (db) and holds none while it replays.
    "advice": {"routing", "registry", "embedding", "tools", "loop", "db", "errors"},
    # The foundation: small modules every room may stand on.
    "settings": {"routing", "embedding", "registry", "db"},
    "db": set(),
    "db_health": {"db"},
    "models": {
        "registry",
        "loop",
        "keys",
        "sources",
        "dashboard",
        "limits",
        "learning",
    },  # every table on one metadata, for Alembic
    "metrics": set(),
    "migrate": {"db"},
    "errors": {"registry"},
    "schemas": {"registry", "routing"},
    "capacity": {"errors"},  # slots per kind of expensive request; the server's connections
    # The assembly, and the surfaces it serves.
    "services": ROOMS - {"cli", "api", "dashboard", "deps", "main", "services"},
    "deps": ROOMS - {"cli", "api", "dashboard", "main", "deps"},
    "api": ROOMS - {"cli", "dashboard", "mcp", "main", "api"},
    "mcp": ROOMS - {"cli", "dashboard", "main", "mcp"},
    "dashboard": ROOMS - {"cli", "api", "mcp", "main", "dashboard"},
    "main": ROOMS - {"cli", "main"},
    "cli": ROOMS - {"cli"},  # the command line drives every room
}
# What app/models.py may reach into: the tables of the rooms.
TABLES_ONLY = {
    "loop.models",
    "keys.models",
    "sources.models",
    "dashboard.signouts",
    "limits.models",
    "learning.models",
}


def room_of(module: str) -> str | None:
    """'app.loop.feedback' → 'loop'; 'registry.card' → 'registry'; other libraries → None."""
    parts = module.split(".")
    if parts[0] == "registry":
        return "registry"
    if parts[0] == "app" and len(parts) > 1:
        return parts[1]
    return None


def sources() -> Iterator[tuple[str, Path]]:
    for folder in ("app", "registry"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).with_suffix("")
            parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
            yield ".".join(parts), path


def imported(module: str, path: Path) -> Iterator[str]:
    """Every module the file imports, resolved to a full dotted name."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def room_edges() -> dict[tuple[str, str], list[str]]:
    """(from room, to room) → the modules where one imports the other."""
    edges: dict[tuple[str, str], list[str]] = {}
    modules = dict(sources())
    for module, path in modules.items():
        source = room_of(module)
        for name in imported(module, path):
            target = room_of(name)
            if target is None or target == source or source is None:
                continue
            edges.setdefault((source, target), []).append(f"{module} → {name}")
    return edges


def test_every_room_is_in_the_plan() -> None:
    rooms = {room_of(module) for module, _ in sources()} - {None}
    assert rooms == ROOMS == set(MAY_IMPORT), rooms ^ ROOMS


def test_app_keeps_few_top_level_modules() -> None:
    modules = [p for p in (ROOT / "app").glob("*.py") if p.name != "__init__.py"]
    assert len(modules) <= 12, sorted(p.name for p in modules)


def test_each_room_imports_only_what_the_plan_allows() -> None:
    broken = [
        f"{source} may not import {target}: {where[0]}"
        for (source, target), where in sorted(room_edges().items())
        if target not in MAY_IMPORT[source]
    ]
    assert not broken, "\n".join(broken)


def test_models_reach_only_into_tables() -> None:
    for name in imported("app.models", ROOT / "app" / "models.py"):
        if name.startswith("app.") and room_of(name) != "models":
            assert any(name.startswith(f"app.{table}") for table in TABLES_ONLY), name


def test_no_import_loops_between_rooms() -> None:
    graph: dict[str, set[str]] = {}
    for source, target in room_edges():
        graph.setdefault(source, set()).add(target)

    def walk(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                pytest.fail("import loop: " + " → ".join([*path[path.index(nxt) :], nxt]))
            walk(nxt, [*path, nxt])

    for start in sorted(graph):
        walk(start, [start])


def test_only_the_unit_of_work_commits() -> None:
    committers = []
    for module, path in sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in {"commit", "begin"}:
                committers.append(f"{module}:{node.lineno} .{node.attr}")
    assert len(committers) == 1 and committers[0].startswith("app.db:"), committers


WEB = {"fastapi", "starlette", "uvicorn", "jinja2", "multipart", "httpx"}


def test_registry_imports_no_web_framework() -> None:
    for module, path in sources():
        if room_of(module) == "registry":
            found = {name.split(".")[0] for name in imported(module, path)} & WEB
            assert not found, f"{module} imports {found}"
    code = "import sys, registry.card, registry.calls, registry.formats, registry.repository;"
    code += "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert not WEB & set(out.stdout.split()), out.stdout
