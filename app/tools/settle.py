"""When a background cache rebuilds after writes: once they settle, and never much later.

A namespace's look-alikes and its card examples' votes are rebuilt from each new snapshot of
the live index, off the request path; at 10,000 tools a rebuild takes a noticeable share of
a core (docs/BENCHMARKS.md, "Look-alikes under load"). Rebuilt after every write, or every
second of a stream of writes, they took that from the writes themselves on a 2-core
machine. ``Settle`` makes one rebuild for a burst: ``quiet``
seconds after its last write, or ``longest`` seconds after its first if the writes never
stop, so a cache is never more than ``longest`` seconds behind.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

QUIET = 0.5  # seconds without a write before a rebuild
LONGEST = 5.0  # seconds a rebuild may wait for the writes to stop


class Settle:
    """``wake()`` on each write (any thread); the rebuilding thread calls ``wait()``, which
    returns once a burst has settled, or False when ``stop()`` was called."""

    def __init__(self, quiet: float = QUIET, longest: float = LONGEST) -> None:
        self.quiet, self.longest = quiet, longest
        self._cond = threading.Condition()
        self._first: float | None = None  # the burst's first wake, while one is waiting
        self._last = 0.0
        self._stopped = False

    def wake(self) -> None:
        with self._cond:
            now = time.monotonic()
            self._first = now if self._first is None else self._first
            self._last = now
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def wait(self) -> bool:
        """Block until a burst of wakes has settled (then it is taken: the next ``wait``
        waits for the next wake); False once stopped."""
        with self._cond:
            while not self._stopped:
                if self._first is None:
                    self._cond.wait()
                    continue
                due = min(self._last + self.quiet, self._first + self.longest)
                left = due - time.monotonic()
                if left <= 0:
                    self._first = None
                    return True
                self._cond.wait(left)
            return False


class Rebuilder:
    """A cache's background thread: ``rebuild()`` at ``start``, then once per settled burst
    of ``wake()`` calls, until ``stop``. A failed rebuild is logged (``failure``) and tried
    again after the next write."""

    def __init__(
        self, name: str, rebuild: Callable[[], object], log: logging.Logger, failure: str
    ) -> None:
        self.settle = Settle()
        self._name, self._rebuild, self._log, self._failure = name, rebuild, log, failure
        self._thread: threading.Thread | None = None

    def wake(self) -> None:
        self.settle.wake()

    def start(self) -> None:
        def loop() -> None:
            while True:
                try:
                    self._rebuild()
                except Exception:
                    self._log.exception(self._failure)
                if not self.settle.wait():
                    return

        self._thread = threading.Thread(target=loop, name=self._name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.settle.stop()
        if self._thread is not None:
            self._thread.join(timeout=5)
