"""Progress off a terminal is a few plain lines, not a status per redraw."""

from __future__ import annotations

import io

from tqdm import tqdm

from app.cli.progress import LineProgress, progress_bar, progress_iter


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_ten_thousand_updates_off_a_terminal_are_eleven_lines() -> None:
    log = io.StringIO()  # a log file: no terminal
    with progress_bar(10_000, "embedding tools", unit="tool", stream=log) as bar:
        for _ in range(10_000):
            bar.update(1)
    text = log.getvalue()
    assert "\r" not in text and text.endswith("\n")
    lines = text.splitlines()
    assert len(lines) == 11, lines  # 0 %, 10 %, ..., 100 %
    assert lines[0].startswith("embedding tools: 0% (1/10,000 tool)")
    assert lines[-1].startswith("embedding tools: 100% (10,000/10,000 tool)")


def test_tqdm_off_a_terminal_wrote_a_status_per_redraw() -> None:
    """What the log files were full of, for the record: tqdm's redraws, one per update
    (each a carriage return, every one a line to a log viewer)."""
    log = io.StringIO()
    with tqdm(total=1000, file=log, mininterval=0, miniters=1) as bar:
        for _ in range(1000):
            bar.update(1)
    assert len(log.getvalue().replace("\r", "\n").splitlines()) > 500


def test_a_slow_step_says_it_is_alive_every_half_minute_and_no_more() -> None:
    log, clock = io.StringIO(), Clock()
    with LineProgress(None, "replaying queries", "query", log, clock=clock) as bar:
        for _ in range(600):  # ten minutes, a query a second, no total known
            clock.now += 1
            bar.update(1)
    lines = log.getvalue().splitlines()
    assert 20 <= len(lines) <= 22, lines  # every 30 s, and the last
    assert lines[-1] == "replaying queries: 600 query in 600s"


def test_a_step_that_ends_early_still_says_where_it_stopped() -> None:
    log = io.StringIO()
    with progress_bar(100, "purging route events", unit="route", stream=log) as bar:
        bar.update(5)
        bar.update(3)
    assert log.getvalue().splitlines()[-1].startswith("purging route events: 8% (8/100 route)")


def test_an_iterable_is_counted_and_passed_through() -> None:
    log = io.StringIO()
    assert list(progress_iter(range(250), "routing", unit="query", stream=log)) == list(range(250))
    lines = log.getvalue().splitlines()
    assert len(lines) == 11 and "100% (250/250 query)" in lines[-1]


def test_a_terminal_gets_the_tqdm_bar() -> None:
    screen = Terminal()
    bar = progress_bar(10, "embedding", unit="tool", stream=screen)
    assert isinstance(bar, tqdm)
    bar.close()
