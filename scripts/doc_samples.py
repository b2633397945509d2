"""Run the README's blocks against a service, as a new user would, and keep its sample answers
true: ``--write`` rewrites each sample from the running service, ``--check`` compares their
shape (the fields and their types, not the values) with what the service answers now.

    .venv/bin/python scripts/doc_samples.py --write     # after a change to the answers
    .venv/bin/python scripts/doc_samples.py --check     # what tests/docs/test_readme.py does

A service is started as `make run` starts one (``toolreach init-local`` then ``serve``, the
demo catalog, the default encoder unless ``--encoder``), in a scratch folder beside the
repository's ``examples`` and ``.venv``; the README's ```sh blocks then run in order in one
bash session (ports swapped for free ones), and its ```python blocks with this Python. A
```json block right after a ```sh block is that block's sample answer: the last line the
block prints. Blocks in other pages run after the README's when an HTML comment
``<!-- doc-samples: run -->`` stands right before them. The README's blocks that are not
run are named in NOT_RUN, each with its reason.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
OTHER_PAGES = [ROOT / "docs" / "API.md"]
RUN_MARK = "<!-- doc-samples: run -->"
# README blocks not run, by their first line: the service stands for the quick start, and
# the Postgres one makes a database and serves in the foreground.
NOT_RUN = {
    "make install   # Python 3.11 virtual environment in .venv, models built locally": "the "
    "quick start: the walk starts the service as `make run` does",
    "export TOOLREACH_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/toolreach": "makes a "
    "database and serves in the foreground",
}
PORTS = {"8000": "service", "8001": "mcp"}  # the README's ports, swapped for free ones
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)


@dataclass
class Block:
    page: Path
    language: str
    text: str
    start: int  # offsets of the block's body in the page's text
    end: int
    sample: Block | None = None  # the ```json block that follows a ```sh block

    @property
    def first_line(self) -> str:
        return self.text.splitlines()[0] if self.text else ""


@dataclass
class Ran:
    block: Block
    stdout: str
    stderr: str
    status: int

    @property
    def answer(self) -> str:
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        return lines[-1] if lines else ""


@dataclass
class Walk:
    ran: list[Ran] = field(default_factory=list)
    skipped: list[Block] = field(default_factory=list)
    agent_run: str = ""  # examples/agent's scripted run, its README's "One run"


def blocks(page: Path, *, marked_only: bool = False) -> list[Block]:
    """The page's fenced blocks, each ```json one after a ```sh one tied to it as its
    sample; with ``marked_only``, only the blocks after RUN_MARK (and their samples)."""
    text = page.read_text(encoding="utf-8")
    found: list[Block] = []
    for match in BLOCK.finditer(text):
        block = Block(page, match.group(1), match.group(2), match.start(2), match.end(2))
        before = text[: match.start()].rstrip()
        previous = found[-1] if found else None
        if block.language == "json" and previous and previous.language == "sh":
            between = text[previous.end : match.start()]
            if between.strip() == "```":
                previous.sample = block
                continue
        if marked_only and not before.endswith(RUN_MARK):
            continue
        found.append(block)
    return found


def runnable(page: Path, *, marked_only: bool = False) -> tuple[list[Block], list[Block]]:
    """(the blocks to run, the README's blocks left out by NOT_RUN)."""
    run, skipped = [], []
    for block in blocks(page, marked_only=marked_only):
        if block.language not in ("sh", "python"):
            continue
        (skipped if block.first_line in NOT_RUN else run).append(block)
    return run, skipped


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def swapped(text: str, ports: dict[str, int]) -> str:
    for old, new in ports.items():
        text = re.sub(rf"(?<=[:=\s]){old}\b", str(new), text)
    return text


@contextmanager
def service(encoder: str | None) -> Iterator[tuple[Path, dict[str, int], dict[str, str]]]:
    """A scratch checkout (links to examples/, app/ and .venv) with the service of `make run`
    serving from it on a free port: (its folder, the ports, the environment to run in)."""
    with tempfile.TemporaryDirectory(prefix="toolreach-walk-") as scratch:
        home = Path(scratch)
        for part in ("examples", "app", "clients", "tests"):
            (home / part).symlink_to(ROOT / part)
        (home / ".venv").symlink_to(Path(sys.prefix))
        ports = {old: free_port() for old in PORTS}
        env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'clients' / 'python' / 'src'}"}
        env |= {"HF_HUB_OFFLINE": "1", "TOOLREACH_LOG_LEVEL": "warning"}
        if encoder:
            env["TOOLREACH_ENCODER"] = encoder
        toolreach = [sys.executable, "-m", "app.cli"]
        subprocess.run(
            [*toolreach, "init-local"], cwd=home, env=env, check=True, capture_output=True
        )
        log = (home / "service.log").open("wb")
        server = subprocess.Popen(
            [*toolreach, "serve", "--port", str(ports["8000"])],
            cwd=home,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            url = f"http://127.0.0.1:{ports['8000']}"
            ready(url, server, home / "service.log")
            settled(url)
            yield home, ports, env
        finally:
            server.terminate()
            server.wait(timeout=30)
            log.close()


def ready(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the service stopped:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise RuntimeError("the service did not get ready")


def settled(url: str) -> None:
    """Once the demo cards' examples vote (built in the background a moment after start),
    so the answers are those a user meets after the first seconds."""
    deadline = time.monotonic() + 120
    step = {"query": "where is my parcel?", "k": 1}
    while time.monotonic() < deadline:
        answer = httpx.post(f"{url}/v1/route", json=step, timeout=30).json()
        if "examples" in answer["candidates"][0]["stages"]:
            return
        time.sleep(0.3)
    raise RuntimeError("the demo cards' examples never voted")


def run_shell(
    shell: list[Block], home: Path, ports: dict[str, int], env: dict[str, str]
) -> list[Ran]:
    """The ```sh blocks in one bash session (what one exports, the next sees), in order; a
    failing command stops the walk there. Its background jobs are ended with it."""
    script = ["set -eo pipefail"]
    for i, block in enumerate(shell):
        script += [
            f"echo '@@start {i}' >&2; echo '@@start {i}'",
            f"{{\n{swapped(block.text, ports)}\n}}",
            f"printf '\\n@@end {i}\\n' >&2; printf '\\n@@end {i}\\n'",  # curl ends no line
        ]
    out, err = home / "walk.out", home / "walk.err"  # files: a background job keeps a pipe
    with out.open("w") as stdout, err.open("w") as stderr:  # open, and a read never ends
        session = subprocess.Popen(
            ["bash", "-c", "\n".join(script)],
            cwd=home,
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        try:
            session.wait(timeout=600)
        finally:
            with suppress(ProcessLookupError):
                os.killpg(session.pid, signal.SIGTERM)  # the README's background server
    stdout_text = out.read_text(encoding="utf-8")
    outs, errs = _split(stdout_text), _split(err.read_text(encoding="utf-8"))
    return [
        Ran(block, outs.get(i, ""), errs.get(i, ""), 0 if f"@@end {i}" in stdout_text else 1)
        for i, block in enumerate(shell)
    ]


def run_python(block: Block, home: Path, ports: dict[str, int], env: dict[str, str]) -> Ran:
    done = subprocess.run(
        [sys.executable, "-c", swapped(block.text, ports)],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Ran(block, done.stdout, done.stderr, done.returncode)


def _split(output: str) -> dict[int, str]:
    parts: dict[int, str] = {}
    current: int | None = None
    for line in output.splitlines(keepends=True):
        if line.startswith("@@start "):
            current = int(line.split()[1])
            parts[current] = ""
        elif line.startswith("@@end "):
            current = None
        elif current is not None:
            parts[current] += line
    return parts


def walk(encoder: str | None = None) -> Walk:
    """Every runnable block of the README (then the marked ones of the other pages)."""
    chosen, skipped = runnable(README)
    for page in OTHER_PAGES:
        chosen += runnable(page, marked_only=True)[0]
    result = Walk(skipped=skipped)
    with service(encoder) as (home, ports, env):
        shell = [b for b in chosen if b.language == "sh"]
        result.ran += run_shell(shell, home, ports, env)
        result.ran += [run_python(b, home, ports, env) for b in chosen if b.language == "python"]
        agent = subprocess.run(
            [sys.executable, "react_agent.py", "--scripted"],
            cwd=ROOT / "examples" / "agent",
            env={**env, "TOOLREACH_URL": f"http://127.0.0.1:{ports['8000']}"},
            capture_output=True,
            text=True,
            timeout=300,
        )
        result.agent_run = agent.stdout if agent.returncode == 0 else ""
    return result


# --- samples ------------------------------------------------------------------------------


def shape(value: Any) -> Any:
    """What a sample promises: the fields at every level and their types, not the values."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        kinds = {json.dumps(shape(item), sort_keys=True) for item in value}
        return [json.loads(kind) for kind in sorted(kinds)]
    if isinstance(value, bool) or value is None:
        return type(value).__name__
    return "number" if isinstance(value, int | float) else type(value).__name__


def pretty(value: Any, indent: int = 0, width: int = 100) -> str:
    """JSON as the docs show it: a value on one line when it fits; else its parts packed
    onto lines, as many a line as fit, each part that does not fit broken the same way."""
    flat = json.dumps(value, ensure_ascii=False)
    if indent + len(flat) <= width or not isinstance(value, dict | list) or not value:
        return flat
    if isinstance(value, dict):
        opening, closing = "{", "}"
        parts = [
            f"{json.dumps(k, ensure_ascii=False)}: {pretty(v, indent + 1, width)}"
            for k, v in value.items()
        ]
    else:
        opening, closing = "[", "]"
        parts = [pretty(v, indent + 1, width) for v in value]
    lines = [opening]
    pad = " " * (indent + 1)
    for i, part in enumerate(parts):
        part += "," if i < len(parts) - 1 else closing
        first, *rest = part.split("\n")
        glue = "" if lines[-1] == opening else " "
        column = len(lines[-1]) + (indent if len(lines) == 1 else 0)  # where the line ends
        if column + len(glue) + len(first) <= width:
            lines[-1] += glue + first
        else:
            lines.append(pad + first)
        lines += rest
    return "\n".join(lines)


def drifted(walked: Walk) -> list[str]:
    """Each sample whose shape is not what the service answers now."""
    problems = []
    for ran in walked.ran:
        sample = ran.block.sample
        if sample is None:
            continue
        where = f"{sample.page.name}: the sample after `{ran.block.first_line[:60]}`"
        try:
            shown, answered = json.loads(sample.text or "null"), json.loads(ran.answer)
        except ValueError as exc:
            problems.append(f"{where}: not JSON ({exc})")
            continue
        if shape(shown) != shape(answered):
            problems.append(f"{where}: has {shape(shown)}, the service answers {shape(answered)}")
    return problems


def masked(value: Any) -> Any:
    """A sample without a real secret in it (a key made by POST /v1/keys)."""
    if isinstance(value, dict):
        return {k: masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v) for v in value]
    return "trk_…" if isinstance(value, str) and value.startswith("trk_") else value


def write(walked: Walk) -> list[Path]:
    """Each sample rewritten from what the service answered (pages changed)."""
    edits: dict[Path, list[tuple[int, int, str]]] = {}
    if walked.agent_run:
        page = ROOT / "examples" / "agent" / "README.md"
        text = page.read_text(encoding="utf-8")
        start = text.index("```\n", text.index("## One run")) + 4
        edits[page] = [(start, text.index("```\n", start), walked.agent_run)]
    for ran in walked.ran:
        if ran.block.sample is not None:
            text = pretty(masked(json.loads(ran.answer))) + "\n"
            edits.setdefault(ran.block.page, []).append(
                (ran.block.sample.start, ran.block.sample.end, text)
            )
    for page, changes in edits.items():
        text = page.read_text(encoding="utf-8")
        for start, end, new in sorted(changes, reverse=True):
            text = text[:start] + new + text[end:]
        page.write_text(text, encoding="utf-8")
    return sorted(edits)


def failures(walked: Walk) -> list[str]:
    """Blocks that did not run as written: a failing command, or an error answered."""
    bad = []
    for ran in walked.ran:
        said = ran.stdout + ran.stderr
        if ran.status != 0 or '{"error":' in ran.stdout or "Traceback" in said:
            bad.append(f"`{ran.block.first_line[:70]}`: status {ran.status}\n{said[-2000:]}")
    return bad


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the samples")
    parser.add_argument("--check", action="store_true", help="compare the samples' shapes")
    parser.add_argument("--encoder", help="TOOLREACH_ENCODER of the service (default: its own)")
    args = parser.parse_args(argv)
    walked = walk(args.encoder)
    problems = failures(walked)
    if args.write and not problems:
        for page in write(walked):
            print(f"rewrote the samples of {page.relative_to(ROOT)}")
    if args.check or not args.write:
        problems += drifted(walked)
    print("\n".join(problems) or f"{len(walked.ran)} blocks ran as written")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
