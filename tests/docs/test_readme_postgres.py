"""The README's Postgres block, run where a user runs it: in a folder where `make run` wrote
its `.env` (issue 42 item 6). Before, the block read that `.env` without saying so: its
`TOOLREACH_LOAD_DEMO=true` loaded the 40 demo tools into the new database, and its `serve`
took port 8000, which `make run` holds. Now it sets what it changes: no demo, its own port.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLREACH = ROOT / ".venv" / "bin" / "toolreach"


def postgres_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Running on Postgres") :]
    found = re.search(r"```sh\n(.*?)```", section, re.S)
    assert found is not None
    return found.group(1)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_block_names_its_own_port_and_no_demo() -> None:
    serve = postgres_block().strip().splitlines()[-1]
    port = re.search(r"--port (\d+)", serve)
    assert port is not None and port.group(1) != "8000", serve  # make run's
    assert "TOOLREACH_LOAD_DEMO=false" in serve, serve


def test_the_block_beside_make_runs_env_serves_an_empty_registry(tmp_path: Path) -> None:
    """Run as written (its database and port swapped for free ones) in a folder holding the
    `.env` that `make run` writes: the service answers, with no demo tool in it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    env["TOOLREACH_ENCODER"] = "fake"  # what is checked is which tools load, not the model
    env.pop("TOOLREACH_DATABASE_URL", None)
    init = [str(TOOLREACH), "init-local"]
    subprocess.run(init, cwd=tmp_path, env=env, check=True, capture_output=True, timeout=120)
    assert "TOOLREACH_LOAD_DEMO=true" in (tmp_path / ".env").read_text()
    database, port = f"readme_{uuid.uuid4().hex[:10]}", free_port()
    block = postgres_block().replace("/toolreach\n", f"/{database}\n")
    block = block.replace(" toolreach\n", f" {database}\n")
    block = block.replace(".venv/bin/", f"{ROOT}/.venv/bin/")
    *setup, serve = block.strip().splitlines()
    serve = re.sub(r"--port \d+", f"--port {port}", serve)
    assert database in "\n".join(setup) and f"--port {port}" in serve
    script = "\n".join(["set -e", *setup, f"exec env {serve}"])  # its variables, then it
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        ["bash", "-c", script], cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        status, answer = routed(port, process, tmp_path)
        # an empty registry: the namespace never held a tool (with the demo, 200 and its tools)
        assert status == 404, answer
        assert answer["error"]["message"] == "no tools in namespace 'default'", answer
    finally:
        with contextlib.suppress(ProcessLookupError):  # it may have stopped on its own
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
        drop = ["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", "--force", database]
        subprocess.run(drop, check=False, capture_output=True, timeout=60)


def routed(port: int, process: subprocess.Popen[bytes], folder: Path) -> tuple[int, Any]:
    """The demo's own step, routed once the service is ready: the status and the answer."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the block stopped:\n{(folder / 'serve.log').read_text()[-3000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                body = {"query": "where is my parcel?"}
                answer = httpx.post(f"http://127.0.0.1:{port}/v1/route", json=body, timeout=30)
                return answer.status_code, answer.json()
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    pytest.fail(f"the block's service did not get ready:\n{(folder / 'serve.log').read_text()}")
