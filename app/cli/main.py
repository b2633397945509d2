"""The `toolreach` command line (its commands: ``build_parser``; docs/CLI.md)."""

from __future__ import annotations

import argparse
import json
import logging
import secrets
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from app.cli import args as cli_args
from app.cli.progress import progress_bar
from app.embedding.encoders import ENCODER_KINDS
from app.settings import Settings, SettingsError, load_settings

Handler = Callable[[argparse.Namespace, Settings], int]
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class CliError(Exception):
    """A problem the user can fix; printed without a stack trace, exit status 2."""


def read_items(path: Path) -> list[Any]:
    """Tools from a JSON list, a JSONL file (one tool a line) or a YAML list."""
    from app.cli.jsonl import JsonlError, read_lines, read_text

    try:
        if path.suffix == ".jsonl":
            return [item for _, item in read_lines(path)]
        text = read_text(path)
    except JsonlError as exc:
        raise CliError(str(exc)) from None
    try:
        items: Any = yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else json.loads(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        kind = "YAML" if path.suffix in (".yaml", ".yml") else "JSON"
        raise CliError(f"{path}: not valid {kind}: {exc}") from None
    if isinstance(items, dict) and isinstance(items.get("tools"), list):
        items = items["tools"]
    if not isinstance(items, list):
        raise CliError(f"{path}: expected a list of tools (or {{'tools': [...]}})")
    return items


def _write_text(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"{path}: cannot write: {exc.strerror}") from None


def _services(settings: Settings) -> Any:
    from app.services import build_services

    return build_services(settings)


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from app.api.parser_limits import protocol_class
    from app.capacity.connections import server_options
    from app.capacity.malloc import fix_mmap_threshold, limit_arenas
    from app.main import create_app

    _check_port_free(args.host, args.port)
    _check_database(settings)  # a wrong URL or an unmigrated database: one clear line
    # A missing model the encoder runs is built here, with a clear error if it cannot be.
    _build_models(settings, force=False, encoder=settings.encoder)
    fix_mmap_threshold(settings.malloc_mmap_threshold)  # each write's old index given back
    limit_arenas(settings.malloc_arena_max)  # before the service's threads start

    uvicorn.run(
        create_app(settings, freeze_gc=True),
        host=args.host,
        port=args.port,
        log_level=settings.log_level,
        log_config=log_config(settings.log_level),
        **server_options(
            header_timeout=settings.server_header_timeout,
            keepalive_timeout=settings.server_keepalive_timeout,
            max_connections=settings.server_max_connections,
            base=protocol_class(settings.max_url_bytes),  # its refusals in the error shape
        ),
        # Who a request comes from is decided once, by TOOLREACH_TRUSTED_PROXIES
        # (app/limits/client.py), not also by uvicorn, which believes 127.0.0.1 by default.
        proxy_headers=False,
    )
    return 0


def log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging, plus the service's own loggers (``toolreach.*``, ``app.*``) at
    ``TOOLREACH_LOG_LEVEL``, each line with its time, level and logger. Without it they had no
    handler: their warnings came out bare, without a time, and their info lines not at all."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["service"] = {"format": LOG_FORMAT}
    config["handlers"]["service"] = {
        "formatter": "service",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
    }
    for name in ("toolreach", "app"):
        config["loggers"][name] = {
            "handlers": ["service"],
            "level": level.upper(),
            "propagate": False,
        }
    return config


def _check_port_free(host: str, port: int) -> None:
    """Before the models load: a port in use is said at once, not after a minute."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise CliError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            raise CliError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None


def _check_database(settings: Settings) -> None:
    from app.services import open_database

    open_database(settings).dispose()


def cmd_migrate(_args: argparse.Namespace, settings: Settings) -> int:
    from app import migrate

    migrate.upgrade(settings.sqlalchemy_url)
    print("database schema is at head")
    return 0


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    from app.db import unit_of_work
    from app.tools.catalog import parse_batch, write_cards

    items = [item for path in args.files for item in read_items(Path(path))]
    batch = parse_batch(items, args.namespace)
    for reject in batch.rejects:
        problems = "; ".join(
            f"{'.'.join(map(str, p.get('loc', []))) or '(tool)'}: {p['message']}"
            for p in reject["problems"] or []
        )
        name = reject["name"] or "no name"
        print(f"rejected item {reject['index']} ({name}): {problems}", file=sys.stderr)
    if batch.rejects and not args.skip_invalid:
        print(
            f"{len(batch.rejects)} invalid of {len(items)}; nothing imported "
            "(fix them, or pass --skip-invalid to import the rest)",
            file=sys.stderr,
        )
        return 1
    services = _services(settings)
    with (
        progress_bar(len(batch.cards), "embedding", unit="tool") as bar,
        unit_of_work(services.session_factory) as session,
    ):
        statuses = write_cards(session, services.encoder, batch.cards, progress=bar.update)
    services.close()
    counts = {s: statuses.count(s) for s in ("created", "updated", "unchanged")}
    print(
        f"imported {len(statuses)} tools: {counts['created']} created, "
        f"{counts['updated']} updated, {counts['unchanged']} unchanged, "
        f"{len(batch.rejects)} rejected"
    )
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from app.db import make_session_factory, unit_of_work
    from app.services import open_database
    from registry import repository
    from registry.formats import from_card

    engine = open_database(settings)
    out: list[dict[str, Any]] = []
    with unit_of_work(make_session_factory(engine)) as session:
        offset = 0
        while True:
            page, total = repository.list_cards(
                session, namespace=args.namespace, offset=offset, limit=500
            )
            for stored in page:
                native = stored.card.model_dump(mode="json")
                out.append(
                    native if args.format == "native" else from_card(stored.card, args.format)
                )
            offset += len(page)
            if not page or offset >= total:
                break
    engine.dispose()
    text = json.dumps(out, ensure_ascii=False, indent=2)
    if args.output:
        _write_text(Path(args.output), text + "\n")
        print(f"exported {len(out)} tools to {args.output}", file=sys.stderr)
    else:
        print(text)
    return 0


def cmd_advice(args: argparse.Namespace, settings: Settings) -> int:
    """The card doctor's advice (GET /v1/advice), read from the database: the namespace's
    reported steps, each finding replayed with the service's encoder and config."""
    from app.advice import service as doctor
    from app.advice.schemas import advice_read
    from app.db import make_session_factory
    from app.services import build_encoder, open_database
    from app.tools.live_index import IndexManager

    engine = open_database(settings)
    factory = make_session_factory(engine)
    encoder = build_encoder(settings)
    index = IndexManager(factory, encoder, settings.router)
    index.sync()
    budget = doctor.Budget(settings.advice_seconds)
    advice = doctor.advise(factory, index, encoder, args.namespace, settings.trust_keys, budget)
    engine.dispose()
    answer = advice_read(args.namespace, advice)
    if args.json:
        print(answer.model_dump_json(indent=2))
        return 0
    for item in answer.advice:
        replay = item.replay
        print(f"{item.id}  {item.kind}  {' -> '.join(item.tools)}  cases={item.cases}")
        print(f"  replay: checked {replay.checked}, fixed {replay.fixed}, broken 0")
        print(f"  {item.diagnosis}")
        for change in item.changes:
            print(f"  change {change.tool}.{change.field}: {json.dumps(change.value)}")
    for note in answer.notes:
        print(f"no advice  {note.kind}  {' -> '.join(note.tools)}: {note.reason}")
    if not answer.advice:
        print(f"no advice for {args.namespace!r}: no finding fixes a reported step unbroken")
    return 0


# What `make run` sets up for a service on one's own machine (docs/CONFIGURATION.md): the
# demo catalog, and sources on this machine (an MCP server or an API one runs locally; the
# outbound rules refuse loopback by default, which a shared service must keep).
LOCAL_SETTINGS = {
    "TOOLREACH_LOAD_DEMO": "true",
    "TOOLREACH_OUTBOUND_ALLOWED_NETWORKS": "127.0.0.0/8,::1/128",
}


def cmd_init_local(args: argparse.Namespace, _settings: Settings) -> int:
    """Create `.env` with a fresh admin key, the demo catalog and sources on this machine
    allowed, once (a setting already in the file is left as it is)."""
    env = Path(args.env_file)
    try:
        lines = env.read_text(encoding="utf-8").splitlines() if env.exists() else []
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"{env}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    values = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    added = []
    if not values.get("TOOLREACH_ADMIN_KEYS"):
        added.append(f"TOOLREACH_ADMIN_KEYS=trk_admin_{secrets.token_urlsafe(24)}")
    added += [f"{name}={value}" for name, value in LOCAL_SETTINGS.items() if name not in values]
    if added:
        _write_text(env, "\n".join([*lines, *added]) + "\n")
        env.chmod(0o600)
    key = dict(line.split("=", 1) for line in [*lines, *added] if "=" in line)[
        "TOOLREACH_ADMIN_KEYS"
    ].split(",")[0]
    print(f"admin key (kept in {env}): {key}")
    return 0


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    from app.cli.evaluate import evaluate, format_table

    data = Path(args.data)
    if not (data / "tools.jsonl").is_file() or not (data / "queries.jsonl").is_file():
        raise CliError(f"{data}: expected tools.jsonl and queries.jsonl in it")
    if args.encoder:
        settings = settings.model_copy(update={"encoder": args.encoder})
    if args.replay_feedback is not None:
        from app.cli.eval_prior import format_replay, replay_prior

        replay = replay_prior(
            data,
            settings,
            args.replay_feedback,
            limit=args.limit,
            poison_share=args.poison,
            learn=args.learn,
            unreported=args.unreported,
        )
        print(json.dumps(replay, indent=2) if args.json else format_replay(replay))
        return 0
    extra = {} if args.no_fit is None else {"no_fit": args.no_fit}
    report = evaluate(data, settings, limit=args.limit, skip_prefix=args.skip_prefix, **extra)
    print(json.dumps(report, indent=2) if args.json else format_table(report))
    return 0


def _build_models(settings: Settings, *, force: bool, encoder: str | None = None) -> list[Path]:
    from app.embedding.model_build import ModelBuildError, build_models

    try:
        return build_models(settings.model_dir, force=force, encoder=encoder)
    except ModelBuildError as exc:
        raise CliError(str(exc)) from None


def cmd_build_model(args: argparse.Namespace, settings: Settings) -> int:
    from app.embedding.model_build import file_sha256

    for path in _build_models(settings, force=args.force):
        print(f"{path} sha256 {file_sha256(path)}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toolreach")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve the HTTP API")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument("--port", type=cli_args.port, default=8000, help="TCP port (8000)")
    serve.set_defaults(handler=cmd_serve)

    sub.add_parser("migrate", help="upgrade the database schema to head").set_defaults(
        handler=cmd_migrate
    )

    imp = sub.add_parser("import", help="import tools from JSON, JSONL or YAML files")
    imp.add_argument(
        "files", nargs="+", metavar="FILE", help="a .json, .jsonl, .yaml or .yml file of tools"
    )
    imp.add_argument("--namespace", help="namespace for tools that name none")
    imp.add_argument("--skip-invalid", action="store_true", help="import the valid ones anyway")
    imp.set_defaults(handler=cmd_import)

    exp = sub.add_parser("export", help="export live tools as JSON")
    exp.add_argument("--namespace", help="only this namespace's tools (default: every namespace)")
    exp.add_argument(
        "--format",
        choices=["native", "openai", "anthropic", "mcp"],
        default="native",
        help="native cards, which keep every name as it is (default), or a model API's tools",
    )
    exp.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: stdout)")
    exp.set_defaults(handler=cmd_export)

    adv = sub.add_parser("advice", help="the card doctor's advice for a namespace (docs/CLI.md)")
    adv.add_argument("--namespace", required=True, help="the namespace whose reports are read")
    adv.add_argument("--json", action="store_true", help="the answer of GET /v1/advice")
    adv.set_defaults(handler=cmd_advice)

    ev = sub.add_parser("eval", help="route a labelled dataset and print quality metrics")
    ev.add_argument("--data", required=True, help="a folder with tools.jsonl and queries.jsonl")
    ev.add_argument("--json", action="store_true", help="machine-readable output")
    ev.add_argument("--limit", type=cli_args.at_least_one, help="only the first N queries")
    ev.add_argument(
        "--encoder",
        choices=list(ENCODER_KINDS),
        help="the encoder to score with (default: TOOLREACH_ENCODER)",
    )
    ev.add_argument(
        "--skip-prefix",
        metavar="PREFIX",
        help="leave out the queries whose id starts with PREFIX (a tuning split, e.g. dev-)",
    )
    ev.add_argument(
        "--no-fit",
        type=cli_args.not_negative,
        metavar="N",
        help="ask N of the queries again without their labelled tools, to measure the "
        "confidence on steps nothing fits (300; 0: skip)",
    )
    ev.add_argument(
        "--replay-feedback",
        type=cli_args.fraction,
        metavar="FRACTION",
        help="report this share of the queries as feedback, then score the rest before and "
        "after (the usage prior and query memory alone move no route)",
    )
    ev.add_argument(
        "--poison",
        type=cli_args.fraction,
        default=0.0,
        metavar="SHARE",
        help="with --replay-feedback: this share of the reports name a wrong tool, each sent "
        "20 times from one key (a poisoning run)",
    )
    ev.add_argument(
        "--unreported",
        type=cli_args.fraction,
        default=0.0,
        metavar="SHARE",
        help="with --replay-feedback: this share of the tools is never reported",
    )
    ev.add_argument(
        "--learn",
        action="store_true",
        help="with --replay-feedback: also train the namespace's reranker from the reports, as "
        "a serving process does (guarded: docs/ROUTING.md, 'Learning from reports'), and "
        "score the held-out queries with it",
    )
    ev.set_defaults(handler=cmd_eval)

    model = sub.add_parser(
        "build-model",
        help="build the default encoder's models from their packages: the int8 MiniLM and "
        "the USE graph (make install does; a service builds what is missing at start)",
    )
    model.add_argument("--force", action="store_true", help="rebuild even if it exists")
    model.set_defaults(handler=cmd_build_model)

    init = sub.add_parser("init-local", help="create .env with a local admin key (make run)")
    init.add_argument(
        "--env-file", default=".env", metavar="FILE", help="the file to create or add to (.env)"
    )

    from app.cli.loop import add_commands
    from app.cli.sources import add_commands as add_source_commands

    add_commands(sub)
    add_source_commands(sub)
    init.set_defaults(handler=cmd_init_local)
    # Written from the commands themselves, so a new one is never left out of --help.
    parser.description = f"The ToolReach command line: {', '.join(sub.choices)}."
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _warnings_to_stderr()
    try:
        settings = load_settings()
        handler: Handler = args.handler
        return handler(args, settings)
    except (CliError, SettingsError) as exc:
        print(f"toolreach: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a clear line, never a stack trace, for expected failures
        message = _expected_failure(exc)
        if message is None:
            raise
        print(f"toolreach: {message}", file=sys.stderr)
        return 2


def _warnings_to_stderr() -> None:
    """Warnings from before serve sets up its logging (an unknown TOOLREACH_* variable, a
    model being built) carry their time, level and logger like every later line. The handler
    itself is at WARNING: some libraries set their own loggers to DEBUG (bm25s)."""
    root = logging.getLogger()
    if root.handlers:  # set up already (a test's capture, an embedding program)
        return
    handler = logging.StreamHandler()
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root.addHandler(handler)


def _expected_failure(exc: Exception) -> str | None:
    """The one line to print for a failure the user can fix (a bad dataset, an unmigrated
    or unreachable database), else None. Imported here: these modules are heavy."""
    from sqlalchemy.exc import OperationalError

    from app.api.error_handlers import first_line
    from app.cli.evaluate import DatasetError
    from app.migrate import NotMigrated
    from registry.errors import ToolReachError

    if isinstance(exc, DatasetError | NotMigrated):
        return str(exc)
    if isinstance(exc, ToolReachError):  # e.g. a source that cannot be read, an unknown name
        return exc.message
    if isinstance(exc, OperationalError):  # no server there, no such database, no file
        reason = first_line(exc.orig or exc)
        return f"cannot use the database: {reason}"
    return None


if __name__ == "__main__":
    sys.exit(main())
