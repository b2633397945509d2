"""One background rebuild per burst of writes: after the burst, or within ``longest`` of its
start if it never ends."""

from __future__ import annotations

import threading
import time

from app.tools.settle import Settle


def test_a_burst_makes_one_rebuild_once_it_is_quiet() -> None:
    settle = Settle(quiet=0.05, longest=30)
    for _ in range(20):
        settle.wake()
    woke_last = time.monotonic()
    assert settle.wait()
    assert time.monotonic() - woke_last >= 0.05  # not before the quiet time
    returned = threading.Event()

    def second() -> None:
        settle.wait()
        returned.set()

    threading.Thread(target=second, daemon=True).start()
    assert not returned.wait(0.3)  # the burst was taken: nothing to rebuild until a wake
    settle.wake()
    assert returned.wait(10)


def test_writes_that_never_stop_still_get_a_rebuild() -> None:
    settle = Settle(quiet=0.2, longest=0.5)
    done = threading.Event()

    def writes() -> None:  # a wake every 10 ms: never 0.2 s of quiet
        while not done.is_set():
            settle.wake()
            time.sleep(0.01)

    threading.Thread(target=writes, daemon=True).start()
    rebuilds: list[bool] = []
    waiter = threading.Thread(target=lambda: rebuilds.extend([settle.wait(), settle.wait()]))
    try:
        settle.wake()
        waiter.start()
        waiter.join(10)  # without ``longest`` it would wait as long as the writes go on
        assert rebuilds == [True, True]
    finally:
        done.set()
        settle.stop()


def test_stop_ends_a_wait() -> None:
    settle = Settle()
    threading.Timer(0.05, settle.stop).start()
    assert settle.wait() is False
