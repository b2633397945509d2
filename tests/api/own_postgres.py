"""A PostgreSQL cluster of a test's own, which the test may freeze (SIGSTOP) and stop.

Never the shared server on 127.0.0.1:5432: freezing that one would hang every other test.
The cluster lives in a temporary directory owned by the ``postgres`` OS user (initdb refuses
to run as root), listens on a free port of 127.0.0.1, and is always stopped and deleted,
thawed first, however the test ends.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psycopg


def postgres_bin() -> Path | None:
    """The newest installed server's bin directory (Debian's layout), if any."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: p.parent)
    return found[-1].parent if found else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class OwnPostgres:
    """One throw-away cluster: start it, freeze and thaw it, stop it."""

    def __init__(self, bin_dir: Path, root: Path) -> None:
        self.bin_dir, self.root, self.port = bin_dir, root, free_port()
        self.data = root / "data"

    def _as_postgres(self, *command: str | Path) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", *map(str, command)],
            check=True,
            capture_output=True,
            timeout=120,
        )

    def init(self) -> None:
        self._as_postgres(self.bin_dir / "initdb", "-D", self.data, "-A", "trust", "-N")

    def start(self) -> None:
        options = (
            f"-k {self.root} -c listen_addresses=127.0.0.1 -p {self.port} "
            "-c fsync=off -c max_connections=40"
        )
        self._as_postgres(
            self.bin_dir / "pg_ctl", "start", "-w", "-t", "60", "-D", self.data,
            "-l", self.root / "log", "-o", options,
        )  # fmt: skip

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
        return self.url(name)

    def pids(self) -> list[int]:
        """The postmaster first, then every process it started (backends, workers)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with suppress(OSError, IndexError, ValueError):
                # The command name (2nd field) is in parentheses and may hold spaces.
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == postmaster:
                    children.append(int(stat.parent.name))
        return [postmaster, *children]

    def freeze(self) -> None:
        """SIGSTOP the postmaster (so it starts no new backend), then all its processes."""
        for pid in self.pids():
            os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        for pid in reversed(self.pids()):
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def stop(self) -> None:
        """Stop at once (no checkpoint), thawed first: a stopped postmaster cannot shut down."""
        if not (self.data / "postmaster.pid").exists():
            return
        with suppress(Exception):
            self.thaw()
        pg_ctl = self.bin_dir / "pg_ctl"
        self._as_postgres(pg_ctl, "stop", "-w", "-t", "30", "-m", "immediate", "-D", self.data)


@contextmanager
def own_postgres() -> Iterator[OwnPostgres]:
    """A running throw-away cluster, thawed, stopped and deleted afterwards whatever happens."""
    bin_dir = postgres_bin()
    if bin_dir is None or os.geteuid() != 0:
        raise RuntimeError("needs root and a local PostgreSQL server installation")
    root = Path(tempfile.mkdtemp(prefix="toolreach-pg-"))
    shutil.chown(root, "postgres", "postgres")
    cluster = OwnPostgres(bin_dir, root)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        with suppress(Exception):
            cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
