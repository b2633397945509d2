"""Every skip in the suite is one a machine without a capability causes: never one a missing
route, a missing feature or a changed answer of the service could cause, since CI would then
stay green over a loss (the gateway's client tests once skipped themselves without /v1/call).

Each skip is listed here with the capability it stands for; a new one must be added, with
its reason, and must test the machine (a binary, root, the platform, the shared datasets).
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
SKIPPING = {"skip", "skipif", "importorskip", "xfail"}

# file → the condition text of each of its skips (the whole call for pytest.skip(...)).
ALLOWED: dict[str, dict[str, str]] = {
    "deploy/tools.py": {"pytest.skip(message)": "a command-line tool missing (a failure in CI)"},
    "shared_data.py": {"pytest.skip(message)": "the public datasets missing (a failure in CI)"},
    "sources/conftest.py": {
        "pytest.skip('node is not installed: the real MCP servers cannot run')": "no node",
    },
    "mcp/test_inspector.py": {"NODE is None": "no node"},
    "sources/test_outbound_addresses.py": {
        "pytest.skip('this machine has no address but loopback and link-local')": (
            "no network interface with a routable address"
        ),
    },
    "unit/test_malloc.py": {"not sys.platform.startswith('linux')": "not glibc"},
    "api/test_frozen_database.py": {
        "postgres_bin() is None or os.geteuid() != 0": "no Postgres binaries, or not root",
    },
    "api/test_database_limits.py": {
        "postgres_bin() is None or os.geteuid() != 0": "no Postgres binaries, or not root",
    },
    "api/test_rate_limits.py": {
        "postgres_bin() is None or os.geteuid() != 0": "no Postgres binaries, or not root",
    },
}


def _skips(tree: ast.AST) -> list[str]:
    """The condition (or the call) of every pytest skip, skipif, importorskip or xfail."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else None
        if name not in SKIPPING:
            continue
        owner = ast.unparse(function.value) if isinstance(function, ast.Attribute) else ""
        if owner not in ("pytest", "pytest.mark"):
            continue
        if name == "skipif" and node.args:
            found.append(ast.unparse(node.args[0]))
        else:
            found.append(ast.unparse(node))
    return found


def test_every_skip_is_a_missing_machine_capability() -> None:
    seen: dict[str, list[str]] = {}
    for path in sorted(TESTS.rglob("*.py")):
        skips = _skips(ast.parse(path.read_text(encoding="utf-8")))
        if skips:
            seen[path.relative_to(TESTS).as_posix()] = skips
    unexpected = {
        file: [s for s in skips if s not in ALLOWED.get(file, {})] for file, skips in seen.items()
    }
    assert not {f: s for f, s in unexpected.items() if s}, (
        "a skip that is not a missing machine capability (list it in ALLOWED with its reason, "
        "or make the test fail instead)"
    )
    assert set(seen) == set(ALLOWED), "ALLOWED names a file that no longer skips"


def test_the_finder_sees_each_kind_of_skip() -> None:
    source = (
        "import pytest\n"
        "pytestmark = pytest.mark.skipif(NO_ROUTE, reason='x')\n"
        "def test():\n"
        "    pytest.skip('no /v1/call')\n"
        "    pytest.importorskip('openai')\n"
        "    pytest.xfail('later')\n"
    )
    assert _skips(ast.parse(source)) == [
        "NO_ROUTE",
        "pytest.skip('no /v1/call')",
        "pytest.importorskip('openai')",
        "pytest.xfail('later')",
    ]
