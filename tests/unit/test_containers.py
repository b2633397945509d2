"""The Dockerfile and docker-compose.yml, checked without a Docker engine."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    assert found, f"{name} is not installed (it is a dev dependency)"
    return found


def compose_config(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``docker-compose config -q`` with only ``env``: an empty env file stands in for the
    ``.env`` that ``make run`` writes beside the compose file (its admin key made the
    refusal below pass unnoticed)."""
    empty = tmp_path / "empty.env"
    empty.write_text("")
    return subprocess.run(
        [tool("docker-compose"), "--env-file", str(empty), "config", "-q"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )


def test_compose_file_is_valid(tmp_path: Path) -> None:
    env = {**os.environ, "TOOLREACH_ADMIN_KEYS": "k" * 20, "TORCH_INDEX_URL": "file:///wheels"}
    result = compose_config(env, tmp_path)
    assert result.returncode == 0, result.stderr


def test_compose_refuses_to_start_without_an_admin_key(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TOOLREACH_ADMIN_KEYS"}
    env["TORCH_INDEX_URL"] = "file:///wheels"
    result = compose_config(env, tmp_path)
    assert result.returncode != 0
    assert "TOOLREACH_ADMIN_KEYS" in result.stderr


def test_dockerfile_passes_hadolint() -> None:
    result = subprocess.run(
        [tool("hadolint"), "Dockerfile"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_image_runs_as_non_root_and_cpu_only() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "USER 10001" in text
    assert "torch==2.13.0" in text
    assert "HF_HUB_OFFLINE=1" in text
