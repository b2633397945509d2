"""`toolreach source add|list|sync|remove`: sources from the command line, on the database
of TOOLREACH_DATABASE_URL (a running service picks the changes up within its poll)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from pydantic import ValidationError

from app.settings import Settings

REF_KINDS = ("env:", "file:")


def value(text: str) -> Any:
    """``plain``, ``env:NAME``, ``file:/run/secrets/x``, or a prefix before a reference
    (``Bearer env:TOKEN``): a reference becomes a SecretRef, read at call time."""
    head, _, last = text.rpartition(" ")
    for kind in REF_KINDS:
        if last.startswith(kind):
            ref = {kind[:-1]: last[len(kind) :]}
            return {**ref, "prefix": head + " "} if head else ref
    return text


def pairs(items: list[str] | None, what: str) -> dict[str, Any]:
    found = {}
    for item in items or []:
        key, sep, rest = item.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"{what} must be NAME=VALUE, not {item!r}")
        found[key] = value(rest)
    return found


def _sources(settings: Settings, *, writes: bool) -> tuple[Any, Callable[[], None]]:
    """The sources service on the configured database, and what closes it; with the
    encoder (the whole service's parts) only when cards are written."""
    if writes:
        from app.services import build_services

        services = build_services(settings)
        return services.sources, services.close
    from app.db import make_session_factory
    from app.services import open_database
    from app.sources.service import SourceService

    engine = open_database(settings)
    factory = make_session_factory(engine)
    no_encoder: Any = None  # listing and removing embed nothing
    return SourceService(settings, factory, no_encoder, lambda: None), engine.dispose


@contextmanager
def opened(settings: Settings, *, writes: bool) -> Iterator[Any]:
    """The sources service (``_sources``) for one command, closed after it."""
    sources, close = _sources(settings, writes=writes)
    try:
        yield sources
    finally:
        close()


def reported(settings: Settings, read: Callable[[Any], Awaitable[Any]], as_json: bool) -> int:
    """Register or sync (``read`` the source) and print its report."""
    with opened(settings, writes=True) as sources:
        report = anyio.run(read, sources)
    print_report(report.model_dump(mode="json"), as_json)
    return 0


def body(args: argparse.Namespace) -> dict[str, Any]:
    where: dict[str, Any] = {}
    if args.openapi:
        target = args.openapi
        where = {"kind": "openapi", ("url" if "://" in target else "path"): target}
    elif args.mcp:
        where = {"kind": "mcp", "url": args.mcp}
    elif args.stdio:
        where = {"kind": "mcp", "command": shlex.split(args.stdio)}
    options = {
        "namespace": args.namespace,
        "prefix": args.prefix,
        "base_url": args.base_url,
        "headers": pairs(args.header, "--header"),
        "query": pairs(args.query, "--query"),
        "env": pairs(args.env, "--env"),
        "strict": args.strict or None,
    }
    return {"name": args.name, **where, **{k: v for k, v in options.items() if v}}


def cmd_add(args: argparse.Namespace, settings: Settings) -> int:
    from app.cli.main import CliError
    from app.sources.schemas import SourceCreate

    try:
        create = SourceCreate.model_validate(body(args))
    except (ValidationError, argparse.ArgumentTypeError) as exc:
        raise CliError(f"bad source: {exc}") from None
    return reported(settings, lambda sources: sources.register(create), args.json)


def cmd_sync(args: argparse.Namespace, settings: Settings) -> int:
    return reported(settings, lambda sources: sources.sync(args.name, force=args.force), args.json)


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    from app.db import unit_of_work

    with opened(settings, writes=False) as sources, unit_of_work(sources.factory) as session:
        listed = sources.list_sources(session, args.namespace)
    if args.json:
        print(json.dumps(listed.model_dump(mode="json"), indent=2))
        return 0
    for s in listed.items:
        where = s.config.get("url") or s.config.get("path") or " ".join(s.config.get("command", []))
        synced = s.synced_at.isoformat(timespec="seconds") if s.synced_at else "never"
        error = f"  last error: {s.last_error}" if s.last_error else ""
        print(
            f"{s.name}\t{s.kind}\t{s.namespace}\t{s.tools} tools\t{s.retired} retired"
            f"\tsynced {synced}\t{where}{error}"
        )
    return 0


def cmd_remove(args: argparse.Namespace, settings: Settings) -> int:
    with opened(settings, writes=False) as sources:
        retired = sources.remove(args.name)
    print(f"removed source {args.name}: {len(retired)} tools retired")
    return 0


def print_report(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"{report['source']}: {report['status']}, {report['tools']} tools "
        f"({len(report['created'])} created, {len(report['updated'])} updated, "
        f"{report['unchanged']} unchanged, {len(report['retired'])} retired, "
        f"{len(report['refused'])} refused) in {report['seconds']} s"
    )
    for refused in report["refused"]:
        what = refused.get("operation") or refused.get("tool") or refused.get("name")
        print(f"  refused {what}: {refused['reason']}", file=sys.stderr)
    for note in report.get("notes") or []:  # renamed clashes; operations it cannot call
        print(f"  note: {note}", file=sys.stderr)
    if report["problems"]:
        print(
            f"  the document has {len(report['problems'])} problems (imported anyway; "
            "--strict refuses it):",
            file=sys.stderr,
        )
        for problem in report["problems"][:5]:
            print(f"    {problem}", file=sys.stderr)


def add_commands(sub: Any) -> None:
    source = sub.add_parser("source", help="sources: OpenAPI documents and MCP servers as tools")
    commands = source.add_subparsers(
        dest="source_command", required=True, metavar="{add,list,sync,remove}", help="what to do"
    )

    add = commands.add_parser("add", help="register a source and read its tools")
    add.add_argument("name")
    where = add.add_mutually_exclusive_group(required=True)
    where.add_argument("--openapi", metavar="URL_OR_FILE", help="an OpenAPI document")
    where.add_argument("--mcp", metavar="URL", help="an MCP server's streamable HTTP endpoint")
    where.add_argument(
        "--stdio",
        metavar="COMMAND",
        help='an MCP server run as a command, e.g. "node server.js stdio"',
    )
    add.add_argument("--namespace", default="default")
    add.add_argument("--prefix", help="put before every tool's name")
    add.add_argument("--base-url", help="OpenAPI: call here instead of the document's servers")
    add.add_argument(
        "--header",
        action="append",
        metavar="NAME=VALUE",
        help="sent with every request; VALUE may be env:VAR, file:PATH, 'Bearer env:VAR'",
    )
    add.add_argument(
        "--query", action="append", metavar="NAME=env:VAR", help="an API key in the query"
    )
    add.add_argument(
        "--env", action="append", metavar="NAME=VALUE", help="a stdio server's environment"
    )
    add.add_argument("--strict", action="store_true", help="refuse an invalid OpenAPI document")
    add.add_argument("--json", action="store_true")
    add.set_defaults(handler=cmd_add)

    ls = commands.add_parser("list", help="the registered sources")
    ls.add_argument("--namespace")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(handler=cmd_list)

    sync = commands.add_parser("sync", help="read a source again (changed tools: new versions)")
    sync.add_argument("name")
    sync.add_argument(
        "--force", action="store_true", help="compare every tool even if nothing changed"
    )
    sync.add_argument("--json", action="store_true")
    sync.set_defaults(handler=cmd_sync)

    remove = commands.add_parser("remove", help="forget a source; its tools are retired")
    remove.add_argument("name")
    remove.set_defaults(handler=cmd_remove)
