"""Progress of the command line's long steps (embedding, routing, replaying, purging).

On a terminal: a tqdm bar, redrawn in place. Anywhere else (a log file, CI, a pipe) tqdm
writes a new status at every redraw, ten a second: a log of ``toolreach eval`` was thousands
of lines. There a plain line is written instead at every tenth of the way, and at least
every ``QUIET_SECONDS`` on a slow step (or with no total known): a dozen lines a step.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sized
from types import TracebackType
from typing import Protocol, TextIO, TypeVar

from tqdm import tqdm

T = TypeVar("T")
STEPS = 10  # lines per step off a terminal: one at each tenth of the way
QUIET_SECONDS = 30.0  # the longest silence off a terminal, so a slow step shows it is alive


class Progress(Protocol):
    """What the steps use of a bar: count work done, and close (also as a context manager)."""

    def update(self, n: int = 1) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> Progress: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> object: ...


class LineProgress:
    """A bar for output that is no terminal: a line at each tenth of ``total`` done, or
    after ``QUIET_SECONDS`` without one, and a last line when it closes."""

    def __init__(
        self,
        total: int | None,
        desc: str,
        unit: str,
        stream: TextIO,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total, self.desc, self.unit, self.stream, self.clock = total, desc, unit, stream, clock
        self.done = 0
        self.started = self.last_line = clock()
        self.said = -1  # the tenth of the way last written
        self.written = -1  # the count last written

    def _tenth(self) -> int:
        return self.done * STEPS // self.total if self.total else 0

    def update(self, n: int = 1) -> None:
        self.done += n
        if self._tenth() > self.said or self.clock() - self.last_line >= QUIET_SECONDS:
            self._write()

    def _write(self) -> None:
        elapsed = self.clock() - self.started
        if self.total:
            share = f"{self.done * 100 // self.total}% ({self.done:,}/{self.total:,} {self.unit})"
        else:
            share = f"{self.done:,} {self.unit}"
        self.stream.write(f"{self.desc}: {share} in {elapsed:.0f}s\n")
        self.stream.flush()
        self.said, self.written, self.last_line = self._tenth(), self.done, self.clock()

    def close(self) -> None:
        """The last line, unless the last update wrote it."""
        if self.written != self.done:
            self._write()

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def progress_bar(
    total: int | None, desc: str, unit: str = "it", stream: TextIO | None = None
) -> Progress:
    """A tqdm bar on a terminal, plain lines elsewhere; on stderr unless told otherwise."""
    stream = stream or sys.stderr
    if stream.isatty():
        bar: Progress = tqdm(total=total, desc=desc, unit=unit, file=stream)
        return bar
    return LineProgress(total, desc, unit, stream)


def progress_iter(
    items: Iterable[T], desc: str, unit: str = "it", stream: TextIO | None = None
) -> Iterator[T]:
    """``items``, one by one, counted on a progress bar (its total: their number, if known)."""
    total = len(items) if isinstance(items, Sized) else None
    with progress_bar(total, desc, unit, stream) as bar:
        for item in items:
            yield item
            bar.update(1)
