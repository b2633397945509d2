"""Issue 27's and 28's probes of OpenAPI sources, through ``POST /v1/sources`` in-process
(SQLite, the fake encoder), on this checkout's ``app`` or another's:

    python -m bench.perf.source_probes                            # this checkout
    python -m bench.perf.source_probes --build /path/to/other/checkout

Prints, one line each: the 987-file description (tests/sources/multifile.py) and its
re-sync's counts; a missing file; a document whose servers are a metadata address or this
host's own; the outbound verdict on the clouds' metadata addresses and this host's; and the
27 KB ``$ref`` fan-out (tests/unit/test_openapi_hostile.py) with its time and memory.
"""

from __future__ import annotations

import gc
import importlib.util
import ipaddress
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import ROOT, parser, peak_memory_mb, rss_mib


def _from_file(relative: str) -> Any:
    """One of this checkout's test modules, by its file (another checkout's `tests` may
    come first on the path)."""
    spec = importlib.util.spec_from_file_location(Path(relative).stem, ROOT / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


KEY = "probe-admin-key-0123456789"
ADMIN = {"Authorization": f"Bearer {KEY}"}


def add(client: Any, name: str, **body: Any) -> tuple[int, str, float, dict[str, Any]]:
    started = time.perf_counter()
    answer = client.post(
        "/v1/sources", json={"name": name, "kind": "openapi", **body}, headers=ADMIN
    )
    report = answer.json()
    if answer.status_code >= 400:
        said = report.get("error", {}).get("message", "")
    else:
        said = f"tools={report.get('tools')} problems={len(report.get('problems', []))}"
    return answer.status_code, said[:240], round(time.perf_counter() - started, 1), report


def one_operation(tmp: Path, name: str, server: str) -> Path:
    operation = {"operationId": name, "responses": {"200": {"description": "ok"}}}
    document = {
        "openapi": "3.0.3",
        "info": {"title": name, "version": "1"},
        "servers": [{"url": server}],
        "paths": {f"/{name}": {"get": operation}},
    }
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(document))
    return path


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--build", type=Path, help="probe this checkout's app instead")
    args = cli.parse_args(argv)
    if args.build is not None:  # this script, with the other checkout's `app` first
        env = {**os.environ, "PYTHONPATH": f"{args.build.resolve()}:{ROOT}"}
        command = [sys.executable, "-m", "bench.perf.source_probes"]
        raise SystemExit(subprocess.run(command, env=env, cwd=tempfile.gettempdir()).returncode)
    probe()


def probe() -> None:
    from fastapi.testclient import TestClient

    from app.embedding.encoders import make_encoder
    from app.main import create_app
    from app.migrate import upgrade
    from app.settings import Settings
    from app.sources.outbound import OutboundRules

    write_document = _from_file("tests/sources/multifile.py").write_document
    fan_out = _from_file("tests/unit/test_openapi_hostile.py").fan_out
    tmp = Path(tempfile.mkdtemp(prefix="source-probes-"))
    url = f"sqlite:///{tmp}/probe.db"
    upgrade(url)
    settings = Settings(
        _env_file=None, database_url=url, admin_keys=(KEY,), encoder="fake",
        source_sync_seconds=0, source_watch=False, index_poll_seconds=3600,
    )  # fmt: skip
    rules = OutboundRules.from_settings(settings)
    with TestClient(create_app(settings, encoder=make_encoder("fake"))) as client:
        status, said, seconds, report = add(client, "many", path=str(write_document(tmp / "many")))
        print(f"987 files, 675 operations: {status} {said} ({seconds} s)")
        if status == 201:
            again = client.post("/v1/sources/many/sync", headers=ADMIN).json()
            counts = f"unchanged {again['unchanged']}, tools {again['tools']}"
            print(f"  re-sync: {again['status']}, {counts}")
            print(f"  first problem: {report['problems'][0][:150]}")
        print("missing file:", add(client, "gone", path=str(tmp / "nowhere.yaml"))[:2])
        for name, server in (
            ("meta", "http://169.254.169.254/latest"),
            ("own", "http://192.0.2.2:8080"),
        ):
            print(
                f"servers {server}:",
                add(client, name, path=str(one_operation(tmp, name, server)))[:2],
            )
        for address in (
            "fd00:ec2::254",
            "100.100.100.200",
            "::ffff:100.100.100.200",
            "168.63.129.16",
        ):
            print(f"refusal({address}): {rules.refusal(ipaddress.ip_address(address))}")
        (tmp / "fan.json").write_text(json.dumps(fan_out(), separators=(",", ":")))
        gc.collect()
        before = round(rss_mib())
        status, said, seconds, _ = add(client, "fan", path=str(tmp / "fan.json"))
        gc.collect()
        after, peak = round(rss_mib()), round(peak_memory_mb())
        size = (tmp / "fan.json").stat().st_size
        memory = f"RSS {before} -> {after} MB, peak {peak} MB"
        print(f"$ref fan-out ({size} B): {status} {said} {seconds} s, {memory}")


if __name__ == "__main__":
    main()
