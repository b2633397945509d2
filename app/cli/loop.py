"""The feedback-loop commands of `toolreach`: purge old route events, simulate an agent."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from app.cli import args as cli_args
from app.cli.progress import progress_bar, progress_iter
from app.settings import Settings, parse_key_entry


def cmd_purge(args: argparse.Namespace, settings: Settings) -> int:
    from app.db import make_session_factory
    from app.learning.service import purge as purge_models
    from app.loop.retention import count_purgeable, purge
    from app.services import open_database

    days = args.older_than or settings.event_retention_days
    before = datetime.now(UTC) - timedelta(days=days)
    engine = open_database(settings)
    factory = make_session_factory(engine)
    try:
        total = count_purgeable(factory, before)
        with progress_bar(total, "purging route events", unit="route") as bar:
            result = purge(factory, before, progress=bar.update)
        models = purge_models(factory, before)
    finally:
        engine.dispose()
    print(
        f"purged {result.routes} route events (with their feedback), "
        f"{result.orphan_feedback} other feedback and {models} learned-model verdicts older "
        f"than {days:g} days (before {before.isoformat(timespec='seconds')}); learned weights "
        "are kept for each namespace's serving and previous model only"
    )
    return 0


def _first(entries: tuple[str, ...]) -> str | None:
    """The key of the first entry (KEY or KEY@NS1|NS2: app/settings.py)."""
    return parse_key_entry(entries[0])[0] if entries else None


def cmd_simulate(args: argparse.Namespace, settings: Settings) -> int:
    import httpx

    from app.cli.main import CliError
    from app.cli.simulate import SimulateOptions, SimulationError, simulate

    data = Path(args.data)
    if not (data / "tools.jsonl").is_file() or not (data / "queries.jsonl").is_file():
        raise CliError(f"{data}: expected tools.jsonl and queries.jsonl in it")
    admin_key = args.admin_key or _first(settings.admin_keys)
    if admin_key is None:
        raise CliError(
            "an admin key is needed to register tools: --admin-key or TOOLREACH_ADMIN_KEYS"
        )
    options = SimulateOptions(
        data=data,
        namespace=args.namespace,
        failure_rate=args.failure_rate,
        limit=args.limit,
        seed=args.seed,
        admin_key=admin_key,
        agent_key=args.key or _first(settings.agent_keys) or admin_key,
    )

    def progress(queries: Any) -> Any:
        return progress_iter(queries, "replaying queries", unit="query")

    try:
        with httpx.Client(base_url=args.url, timeout=60) as client:
            summary = simulate(client, options, progress)
    except SimulationError as exc:
        raise CliError(str(exc)) from None
    except httpx.TransportError as exc:
        raise CliError(f"cannot reach {args.url}: {exc}") from None
    print("\n".join(summary.lines()))
    print(f"see {args.url.rstrip('/')}/dashboard or GET /v1/stats?namespace={args.namespace}")
    return 0


def add_commands(sub: Any) -> None:
    """Add `purge` and `simulate` to the `toolreach` sub-commands."""
    purge = sub.add_parser(
        "purge",
        help="delete route events, feedback and learned-model verdicts past the retention",
    )
    purge.add_argument(
        "--older-than",
        type=cli_args.days,
        metavar="DAYS",
        help="age cut-off in days (default: TOOLREACH_EVENT_RETENTION_DAYS)",
    )
    purge.set_defaults(handler=cmd_purge)

    sim = sub.add_parser("simulate", help="replay a dataset as an agent against a running service")
    sim.add_argument("--data", required=True, help="a folder with tools.jsonl and queries.jsonl")
    sim.add_argument(
        "--url",
        default="http://127.0.0.1:8000",
        help="base URL of the running service (default: http://127.0.0.1:8000)",
    )
    sim.add_argument(
        "--namespace",
        default="simulated",
        help="namespace the dataset's tools are registered and routed in, kept apart from "
        "real tools (default: simulated)",
    )
    sim.add_argument(
        "--failure-rate",
        type=cli_args.share,
        default=0.1,
        help="share of reports with outcome=error, 0 to 1 (default: 0.1)",
    )
    sim.add_argument("--limit", type=cli_args.at_least_one, help="only the first N queries")
    sim.add_argument("--key", help="agent key (default: TOOLREACH_AGENT_KEYS, else the admin key)")
    sim.add_argument("--admin-key", help="admin key (default: TOOLREACH_ADMIN_KEYS)")
    sim.add_argument("--seed", type=int, default=0, help="seed of the failures drawn (default: 0)")
    sim.set_defaults(handler=cmd_simulate)
