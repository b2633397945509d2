"""Issue 27's and 28's probes of OpenAPI sources, through ``POST /v1/sources`` in-process
(SQLite, the fake encoder), on whichever build of ``app`` comes first on the path:

    python bench/source_probes.py                       # this checkout
    PYTHONPATH=/path/to/other/checkout python bench/source_probes.py

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
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT))  # `app` from PYTHONPATH first, if set; else this checkout's


def _from_file(relative: str) -> Any:
    """One of this checkout's test modules, by its file (another checkout's `tests` may
    come first on the path)."""
    spec = importlib.util.spec_from_file_location(Path(relative).stem, ROOT / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


import ifaddr  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from app.embedding.encoders import make_encoder  # noqa: E402
from app.main import create_app  # noqa: E402
from app.migrate import upgrade  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.sources.outbound import OutboundRules  # noqa: E402

write_document = _from_file("tests/sources/multifile.py").write_document
fan_out = _from_file("tests/unit/test_openapi_hostile.py").fan_out

KEY = "probe-admin-key-0123456789"
ADMIN = {"Authorization": f"Bearer {KEY}"}


def status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field))


def add(client: TestClient, name: str, **body: Any) -> tuple[int, str, float, dict[str, Any]]:
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


def own_url() -> str:
    """A URL at one of this machine's own addresses that is neither loopback nor link-local."""
    for adapter in ifaddr.get_adapters():
        for ip in adapter.ips:
            address = ipaddress.ip_address(ip.ip if isinstance(ip.ip, str) else ip.ip[0])
            if not (address.is_loopback or address.is_link_local):
                host = f"[{address}]" if address.version == 6 else str(address)
                return f"http://{host}:8080"
    return "http://127.0.0.2:8080"


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="source-probes-"))
    url = f"sqlite:///{tmp}/probe.db"
    upgrade(url)
    settings = Settings(  # type: ignore[call-arg]
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
        before = status_kb("VmRSS") // 1024
        status, said, seconds, _ = add(client, "fan", path=str(tmp / "fan.json"))
        gc.collect()
        after, peak = status_kb("VmRSS") // 1024, status_kb("VmHWM") // 1024
        size = (tmp / "fan.json").stat().st_size
        memory = f"RSS {before} -> {after} MB, peak {peak} MB"
        print(f"$ref fan-out ({size} B): {status} {said} {seconds} s, {memory}")


if __name__ == "__main__":
    main()
