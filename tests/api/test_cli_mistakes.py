"""User mistakes on the `toolreach` command line: one clear line and exit status 2 (argparse's
own errors too), never a Python traceback — each case below was a traceback or a silent
wrong answer before."""

from __future__ import annotations

import argparse
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.cli.main import main
from tests.api.test_cli import free_port
from tests.api.test_tools import weather_card

TOOL = {"name": "WeatherNow", "description": "Current weather for a city."}
QUERY = {"query": "weather in Lyon", "relevant": ["WeatherNow"]}


def dataset(root: Path, tools: bytes, queries: bytes) -> Path:
    data = root / "data"
    data.mkdir(exist_ok=True)
    (data / "tools.jsonl").write_bytes(tools)
    (data / "queries.jsonl").write_bytes(queries)
    return data


def lines(*items: object) -> bytes:
    return "".join(json.dumps(item) + "\n" for item in items).encode()


def fails_clearly(argv: list[str], capsys: pytest.CaptureFixture[str], *expected: str) -> str:
    """Runs ``argv``, which must end with status 2 and a message holding each ``expected``."""
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse refuses an argument this way
        status = exit_.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Traceback" not in err
    for text in expected:
        assert text in err, err
    return err


GOOD_TOOLS, GOOD_QUERIES = lines(TOOL), lines(QUERY)


@pytest.mark.parametrize(
    ("tools", "queries", "expected"),
    [
        (GOOD_TOOLS, GOOD_QUERIES[:-1] + b"\n{not json\n", "queries.jsonl:2: not valid JSON"),
        (
            GOOD_TOOLS + b"\xff\xfe\n",
            GOOD_QUERIES,
            f"tools.jsonl: not UTF-8 text (byte {len(GOOD_TOOLS)})",
        ),
        (GOOD_TOOLS, GOOD_QUERIES + b"[1, 2]\n", "queries.jsonl:2: expected a JSON object"),
        (lines({"description": "no name"}), GOOD_QUERIES, "tools.jsonl:1: a tool needs a 'name'"),
        (GOOD_TOOLS, lines({"relevant": ["WeatherNow"]}), "queries.jsonl:1: a query needs"),
        (GOOD_TOOLS, lines({"query": None, "relevant": ["x"]}), "queries.jsonl:1: a query needs"),
        (
            GOOD_TOOLS,
            lines({**QUERY, "relevant": []}),
            "'relevant' must be a non-empty array of tool names, not an empty array",
        ),
        (GOOD_TOOLS, lines({**QUERY, "relevant": "WeatherNow"}), "not a string"),
        (b"", GOOD_QUERIES, "tools.jsonl: no tools in it"),
        (GOOD_TOOLS, b"\n", "queries.jsonl: no queries in it"),
        (lines({"name": "x"}), GOOD_QUERIES, "(the first: x: description: Field required)"),
    ],
)
def test_eval_names_the_file_and_line_of_a_bad_dataset(
    env: Path,
    capsys: pytest.CaptureFixture[str],
    tools: bytes,
    queries: bytes,
    expected: str,
) -> None:
    data = dataset(env, tools, queries)
    fails_clearly(["eval", "--data", str(data)], capsys, expected)
    fails_clearly(["eval", "--data", str(data), "--replay-feedback", "0.5"], capsys, expected)
    argv = ["simulate", "--data", str(data), "--admin-key", "k" * 32, "--url", "http://0:9"]
    fails_clearly(argv, capsys, expected)


def test_eval_accepts_a_byte_order_mark_and_warns_of_labels_it_cannot_find(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = {"query": "send an email", "relevant": ["EmailSender"]}
    data = dataset(env, b"\xef\xbb\xbf" + GOOD_TOOLS, lines(QUERY, other))
    assert main(["eval", "--data", str(data), "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["queries"] == 2 and report["queries_naming_unregistered_tools"] == 1
    assert "1 of 2 queries name a tool that is not registered" in captured.err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["eval", "--data", ".", "--limit", "-1"], "must be 1 or more"),
        (["eval", "--data", ".", "--replay-feedback", "1"], "between 0 and 1 (exclusive)"),
        (["eval", "--data", ".", "--replay-feedback", "nan"], "not a finite number"),
        (["eval", "--data", ".", "--no-fit", "-1"], "must be 0 or more"),
        (["purge", "--older-than", "1e9"], "at most 36500"),
        (["purge", "--older-than", "inf"], "not a finite number"),
        (["purge", "--older-than", "abc"], "not a number: 'abc'"),
        (["serve", "--port", "70000"], "a TCP port is 1 to 65535"),
        (["simulate", "--data", ".", "--limit", "0"], "must be 1 or more"),
    ],
)
def test_bad_arguments_are_refused_before_any_work(
    env: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    fails_clearly(argv, capsys, expected)


def test_import_reports_the_line_of_a_bad_jsonl_and_undecodable_bytes(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (env / "t.jsonl").write_text(json.dumps(weather_card()) + "\n\n{oops\n")
    fails_clearly(["import", "t.jsonl"], capsys, "t.jsonl:3: not valid JSON")
    (env / "u.json").write_bytes(b'[{"name": "caf\xe9"}]')
    fails_clearly(["import", "u.json"], capsys, "u.json: not UTF-8 text (byte 14)")


def test_export_and_init_local_say_when_they_cannot_write(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (env / "adir").mkdir()
    fails_clearly(["export", "-o", "adir"], capsys, "adir: cannot write")
    fails_clearly(["export", "-o", "missing/x.json"], capsys, "missing/x.json: cannot write")
    fails_clearly(["init-local", "--env-file", "adir"], capsys, "adir: cannot read")


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://postgres@127.0.0.1:1/none",  # nothing listens there
        "postgresql://postgres@127.0.0.1:5432/toolreach_no_such_database",
        "sqlite:////nonexistent/folder/x.db",
    ],
)
@pytest.mark.parametrize(
    "command", [["migrate"], ["export"], ["purge"], ["serve", "--port", free_port()]]
)
def test_a_database_that_cannot_be_used_is_one_line(
    env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    url: str,
    command: list[str],
) -> None:
    monkeypatch.setenv("TOOLREACH_DATABASE_URL", url)
    fails_clearly(command, capsys, "toolreach: cannot use the database: ")


def test_a_settings_value_that_is_not_json_is_named(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOOLREACH_ROUTER", "{bad")
    fails_clearly(["migrate"], capsys, 'bad setting: error parsing value for field "router"')


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def test_serve_on_a_port_in_use_says_so_before_loading_anything(
    env: Path, capsys: pytest.CaptureFixture[str], busy_port: int
) -> None:
    fails_clearly(["serve", "--port", str(busy_port)], capsys, f"127.0.0.1:{busy_port}: ")


def test_eval_measures_the_confidence_and_can_leave_a_tuning_split_out(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = {"name": "EmailSender", "description": "Send an email to someone."}
    queries = lines(
        {**QUERY, "id": "dev-1"},
        {**QUERY, "query": "is it raining in Oslo", "id": "test-1"},
        {"query": "email Ana the report", "relevant": ["EmailSender"], "id": "test-2"},
    )
    data = dataset(env, lines(TOOL, other), queries)
    assert main(["eval", "--data", str(data), "--json", "--skip-prefix", "dev-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["queries"] == 2
    confidence = report["confidence"]
    assert confidence["in_scope_queries"] == 2 and confidence["no_fit_queries"] == 2
    assert 0 <= confidence["ece"] <= 1 and 0 <= confidence["auroc"] <= 1
    assert main(["eval", "--data", str(data), "--no-fit", "0"]) == 0
    assert "no-fit (labelled tools left out, 0 queries)" in capsys.readouterr().out
    only_tuning = dataset(env, lines(TOOL, other), lines({**QUERY, "id": "dev-1"}))
    argv = ["eval", "--data", str(only_tuning), "--skip-prefix", "dev-"]
    fails_clearly(argv, capsys, "queries.jsonl: no queries in it")


def test_eval_says_why_each_rejected_tool_was_left_out(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = dataset(env, lines(TOOL, {"name": "x"}), GOOD_QUERIES)
    assert main(["eval", "--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert "rejected tools (1, not registered):\n  x: description: Field required" in out


def test_eval_says_which_tools_it_renamed(capsys: pytest.CaptureFixture[str], env: Path) -> None:
    mini = Path(__file__).resolve().parents[1] / "data" / "mini_routing"
    assert main(["eval", "--data", str(mini), "--no-fit", "0"]) == 0
    out = capsys.readouterr().out
    assert "renamed 1 tool(s): a tool name holds only A-Z a-z 0-9 _ . : -" in out
    assert "'天气查询' → '_____" in out
    assert main(["eval", "--data", str(mini), "--no-fit", "0", "--json"]) == 0
    [(old, new)] = json.loads(capsys.readouterr().out)["renamed_tools"].items()
    assert old == "天气查询" and new.startswith("____") and new != "____"


def test_a_line_separator_inside_a_json_string_does_not_cut_the_line(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON allows U+2028, U+0085 and their kind raw in a string; str.splitlines() cut there."""
    tool = {**TOOL, "description": "Current weather\u2028for a city\x85 now."}
    text = json.dumps(tool, ensure_ascii=False) + "\n"
    data = dataset(env, text.encode(), GOOD_QUERIES)
    assert main(["eval", "--data", str(data), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tools"] == 1
    (env / "t.jsonl").write_text(text, encoding="utf-8")
    assert main(["import", "t.jsonl"]) == 0
    assert "1 created" in capsys.readouterr().out


def subcommands() -> dict[str, argparse.ArgumentParser]:
    from app.cli.main import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_every_flag_of_every_command_says_what_it_is(command: str) -> None:
    """`toolreach simulate --help` left --url and --namespace unexplained."""
    parser = subcommands()[command]
    unexplained = [
        "/".join(action.option_strings) or action.dest
        for action in parser._actions
        if not (action.help or "").strip() or action.help == argparse.SUPPRESS
    ]
    assert not unexplained, f"toolreach {command}: {unexplained}"


def test_simulate_help_explains_url_and_namespace(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["simulate", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--url URL base URL of the running service" in text
    assert "--namespace NAMESPACE namespace the dataset's tools are registered" in text
