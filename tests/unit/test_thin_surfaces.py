"""The surfaces stay thin: an endpoint parses, calls one service function and answers; the
dashboard builds no SQL. Read from the source, so a shortcut fails here, not in review."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
THIN = ("validate.py", "tools.py", "stats.py")
# Where service functions live: a call into any of these is a call to a service.
SERVICE_ROOMS = ("app.tools", "app.loop", "app.route", "app.embedding", "registry")
# Which namespace a request works in is part of reading it, like the key's scope
# (app/tools/namespaces.py: a namespace that never held a tool is a 404 before any work).
PARSING = ("app.tools.namespaces.",)
# SQL and the tables: for repositories only, never for an endpoint.
REPOSITORY_ONLY = (
    "sqlalchemy",
    "registry.repository",
    "registry.models",
    "app.loop.models",
    "app.loop.repository",
    "app.loop.stats_repository",
)


def imported_names(tree: ast.Module) -> dict[str, str]:
    """Each name the module binds by an import → the full dotted name it stands for."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name
    return names


def dotted(node: ast.expr, names: dict[str, str]) -> str | None:
    """``tools.read_tool`` → ``app.tools.service.read_tool`` when ``tools`` was imported."""
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        base = dotted(node.value, names)
        return f"{base}.{node.attr}" if base else None
    return None


def endpoints(path: Path) -> Iterator[tuple[str, ast.FunctionDef, dict[str, str]]]:
    """The functions a ``@router.<method>(...)`` decorator makes endpoints."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = imported_names(tree)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(
            isinstance(d, ast.Call)
            and isinstance(d.func, ast.Attribute)
            and isinstance(d.func.value, ast.Name)
            and d.func.value.id == "router"
            for d in node.decorator_list
        ):
            yield f"{path.name}:{node.name}", node, names


THIN_ENDPOINTS = [e for module in THIN for e in endpoints(ROOT / "app" / "api" / module)]


def service_calls(function: ast.FunctionDef, names: dict[str, str]) -> list[str]:
    """The service functions called; building a value of a type (``StatsFilter(...)``) is
    parsing the request, not a call to a service."""
    calls = (dotted(n.func, names) for n in ast.walk(function) if isinstance(n, ast.Call))
    return [
        c
        for c in calls
        if c
        and c.startswith(SERVICE_ROOMS)
        and not c.startswith(PARSING)
        and not c.rpartition(".")[2][:1].isupper()
    ]


def test_the_thin_modules_have_endpoints() -> None:
    """The checks below are about something: every module has its endpoints found."""
    found = {name.split(":")[0] for name, _, _ in THIN_ENDPOINTS}
    assert found == set(THIN)
    assert len(THIN_ENDPOINTS) >= 9


@pytest.mark.parametrize(
    ("name", "function", "names"), THIN_ENDPOINTS, ids=[e[0] for e in THIN_ENDPOINTS]
)
def test_an_endpoint_calls_one_service_function(
    name: str, function: ast.FunctionDef, names: dict[str, str]
) -> None:
    calls = service_calls(function, names)
    assert len(calls) == 1, f"{name} calls {calls or 'no service'}"


@pytest.mark.parametrize(
    ("name", "function", "names"), THIN_ENDPOINTS, ids=[e[0] for e in THIN_ENDPOINTS]
)
def test_an_endpoint_is_parse_call_answer(
    name: str, function: ast.FunctionDef, names: dict[str, str]
) -> None:
    """At most three statements after the docstring; no loop, no branch, no raise."""
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and s is function.body[0])]
    assert len(body) <= 3, name
    logic = (ast.For, ast.While, ast.If, ast.Raise, ast.Try, ast.With)
    assert not [type(n).__name__ for n in ast.walk(function) if isinstance(n, logic)], name


def module_imports(path: Path) -> list[str]:
    names = imported_names(ast.parse(path.read_text(encoding="utf-8")))
    return sorted(set(names.values()))


@pytest.mark.parametrize("path", sorted((ROOT / "app" / "api").glob("*.py")), ids=lambda p: p.name)
def test_the_api_imports_no_sql_and_no_repository(path: Path) -> None:
    reached = [name for name in module_imports(path) if name.startswith(REPOSITORY_ONLY)]
    assert not reached, f"{path.name} imports {reached}"


# The dashboard's own table (signed-out sessions) and its one repository module.
DASHBOARD_TABLES = {"signouts.py"}


@pytest.mark.parametrize(
    "path",
    sorted(p for p in (ROOT / "app" / "dashboard").glob("*.py") if p.name not in DASHBOARD_TABLES),
    ids=lambda p: p.name,
)
def test_the_dashboard_builds_no_sql(path: Path) -> None:
    """Statistics and cards come from the services of app/loop and app/tools; a session may
    be passed along (its type), never queried here."""
    allowed = {"sqlalchemy.orm.Session", "registry.repository.StoredCard"}  # types only
    reached = [
        name
        for name in module_imports(path)
        if name.startswith(REPOSITORY_ONLY) and name not in allowed
    ]
    assert not reached, f"{path.name} imports {reached}"


SURFACES = sorted((ROOT / "app" / "api").glob("*.py")) + sorted(
    (ROOT / "app" / "dashboard").glob("*.py")
)


def annotation_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Every name the function's parameters are annotated with (``Services``, ``IndexDep``)."""
    arguments = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
    return {
        node.id if isinstance(node, ast.Name) else str(node.value)
        for argument in arguments
        if argument.annotation is not None
        for node in ast.walk(argument.annotation)
        if isinstance(node, ast.Name | ast.Constant)
    }


@pytest.mark.parametrize("path", SURFACES, ids=lambda p: p.name)
def test_a_surface_names_the_parts_it_uses(path: Path) -> None:
    """Endpoints, pages and their helpers take the parts they use (``IndexDep``,
    ``GatewayDep``, ...: app/deps.py), never the whole bag of services."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    whole = {"Services", "ServicesDep"}
    takers = [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and annotation_names(node) & whole
    ]
    assert not takers, f"{path.name}: {takers} take the whole Services"


def test_every_part_of_the_services_has_its_dependency() -> None:
    """Each part an endpoint may name is a required field of ``Services``, so no surface
    needs to check it for None; the Postgres-only parts are the ones that may be None."""
    import dataclasses

    from app import deps
    from app.services import Services

    fields = {f.name: f for f in dataclasses.fields(Services)}
    optional = {name for name, f in fields.items() if f.default is None}
    assert optional == {"listener", "replicas"}
    assert not hasattr(deps, "ServicesDep")
    assert {"ExecutorDep", "GatewayDep", "IndexDep", "LearningDep"} <= set(dir(deps))


@pytest.mark.parametrize(
    "path", SURFACES + sorted((ROOT / "app" / "mcp").glob("*.py")), ids=lambda p: p.name
)
def test_no_surface_checks_a_part_production_always_has(path: Path) -> None:
    """``services.gateway is None`` and the like: a part every process has is never None."""
    import dataclasses

    from app.services import Services

    required = {f.name for f in dataclasses.fields(Services) if f.default is not None}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    checks = [
        f"{path.name}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and isinstance(node.ops[0], ast.Is | ast.IsNot)
        and isinstance(node.left, ast.Attribute)
        and node.left.attr in required
        and isinstance(node.comparators[0], ast.Constant)
        and node.comparators[0].value is None
    ]
    assert not checks, checks
