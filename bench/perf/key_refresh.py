"""The key table's cost: one reload of every key (what each replica does every
``TOOLREACH_KEY_REFRESH_SECONDS``) and one lookup of a key (what every request does).

Fills a scratch database with ``--keys`` keys of the table (a tenth of them revoked), then
times ``KeyStore.refresh`` when nothing changed (the mark only) and when something did (a
whole reload), and ``KeyStore.resolve`` (a known key, and a made-up one):

    .venv/bin/python -m bench.perf.key_refresh --keys 10000 \\
        --database postgresql://postgres@127.0.0.1:5432/postgres
    .venv/bin/python -m bench.perf.key_refresh --keys 10000   # a SQLite file
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime

from app import migrate
from app.db import make_engine, make_session_factory, unit_of_work
from app.keys.models import ApiKey
from app.keys.service import new_secret
from app.keys.store import KeyStore, digest
from bench.common import parser
from bench.servers import scratch_database


@contextmanager
def database(server: str | None) -> Iterator[str]:
    """A new, migrated database: on the Postgres server ``server``, else a SQLite file."""
    if server is None:
        url = f"sqlite:///{tempfile.mkdtemp()}/keys.db"
        migrate.upgrade(url)
        yield url
        return
    with scratch_database("toolreach_keybench", admin=server) as url:
        migrate.upgrade(url)
        yield url


def fill(url: str, count: int) -> str:
    """``count`` keys, one in ten revoked, a third of them scoped; returns one live secret."""
    factory = make_session_factory(make_engine(url))
    now, live = datetime.now(UTC), ""
    with unit_of_work(factory) as session:
        for i in range(count):
            secret = new_secret()
            revoked = i % 10 == 9
            live = live if revoked else secret
            session.add(
                ApiKey(
                    id=uuid.uuid4().hex[:16],
                    key_hash=digest(secret),
                    role=("admin", "agent", "dashboard")[i % 3],
                    namespaces=[f"team-{i % 50}"] if i % 3 == 1 else None,
                    label=f"key {i}",
                    created_at=now,
                    revoked_at=now if revoked else None,
                )
            )
    return live


def timed(action: Callable[[], object], repeat: int) -> list[float]:
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        runs.append(time.perf_counter() - started)
    return runs


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__)
    cli.add_argument("--keys", type=int, default=10_000)
    cli.add_argument("--database", help="a Postgres server URL; none: a SQLite file")
    cli.add_argument("--repeat", type=int, default=20)
    args = cli.parse_args(argv)
    with database(args.database) as url:
        secret = fill(url, args.keys)
        store = KeyStore(factory=make_session_factory(make_engine(url)))
        store.refresh()
        checks = timed(store.refresh, args.repeat)  # nothing changed: the mark only

        def reload() -> None:
            store._mark = None  # as after a key made or revoked
            store.refresh()

        reloads = timed(reload, args.repeat)
        known = timed(lambda: store.resolve(secret), 10_000)
        unknown = timed(lambda: store.resolve("trk_made-up-key-0123456789"), 10_000)
    print(f"{args.keys} keys on {url.split(':', 1)[0]}:")
    for what, runs in (("check (unchanged)", checks), ("reload", reloads)):
        print(
            f"  {what}: median {statistics.median(runs) * 1000:.1f} ms, "
            f"max {max(runs) * 1000:.1f} ms"
        )
    print(
        f"  lookup: known {statistics.median(known) * 1e6:.2f} µs, "
        f"made-up {statistics.median(unknown) * 1e6:.2f} µs (median)"
    )


if __name__ == "__main__":
    main()
