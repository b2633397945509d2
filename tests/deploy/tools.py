"""Finding the command-line tools the deployment tests run (`make install` puts them in the
virtual environment): missing in CI is a failure, missing on a workstation a skip that says
how to get them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "toolreach"


def tool(name: str, install_hint: str, *, required_in_ci: bool = True) -> str:
    """The path of ``name``: the virtual environment's bin/ first, then PATH."""
    beside_python = Path(sys.prefix) / "bin" / name
    if beside_python.is_file() and os.access(beside_python, os.X_OK):
        return str(beside_python)
    found = shutil.which(name)
    if found:
        return found
    message = f"{name} is not installed: {install_hint}"
    if required_in_ci and os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    binary = tool("helm", "run `make install` (deploy/install-helm.sh puts it in .venv/bin)")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60)
