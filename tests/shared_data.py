"""The public datasets the tests read by path and never copy into the repository
(``shared/data``: the OpenAPI documents, MetaTool, Seal-Tools).

They are found at ``TOOLREACH_SHARED_DATA``, else in a ``shared/data`` folder beside the
repository or beside one of its parent folders (``/work/shared/data`` for a checkout at
``/work/main`` or a worktree at ``/work/wt/NAME``), or beside those of the local repository
it was cloned from (a clean clone in /tmp of /work/main). Missing data is a machine without the
datasets: a skip that says where they are looked for, and a failure in CI (``CI`` set), so a
lost path can never turn a test into a skip unnoticed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def shared_data() -> Path | None:
    """The shared data folder, or None where this machine has none."""
    named = os.environ.get("TOOLREACH_SHARED_DATA")
    if named:
        return Path(named)
    for folder in [*ROOT.parents, *_origin_parents()]:
        candidate = folder / "shared" / "data"
        if candidate.is_dir():
            return candidate
    return None


def _origin_parents() -> list[Path]:
    """The parent folders of the local repository this one was cloned from, if any."""
    try:
        done = subprocess.run(
            ["git", "-C", str(ROOT), "remote", "get-url", "origin"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    origin = Path(done.stdout.strip().removeprefix("file://"))
    return list(origin.parents) if done.returncode == 0 and origin.is_absolute() else []


def shared_file(*parts: str) -> Path:
    """A file of the shared data; a skip (a failure in CI) where the machine lacks it."""
    folder = shared_data()
    path = None if folder is None else folder.joinpath(*parts)
    if path is not None and path.is_file():
        return path
    where = f"{folder}" if folder is not None else f"no shared/data above {ROOT}"
    message = (
        f"{'/'.join(parts)} is not on this machine ({where}); set TOOLREACH_SHARED_DATA to "
        "the folder of the public datasets"
    )
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)
