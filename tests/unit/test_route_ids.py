"""Route ids: random, distinct, and not shared with a forked worker."""

from __future__ import annotations

import os

from app.route.answer import new_route_id


def test_route_ids_are_distinct_hex_and_differ_in_a_forked_child() -> None:
    ids = [new_route_id() for _ in range(1000)]  # several refills of the buffer
    assert len(set(ids)) == 1000
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the next id, as the parent's next would have been cut
        os.write(write, new_route_id().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    assert child != new_route_id()


def test_a_route_id_tells_when_it_was_made_and_other_ids_tell_nothing() -> None:
    import time

    from app.loop.events import route_id_time

    made = route_id_time(new_route_id())
    assert made is not None and abs(made - time.time()) < 5
    assert route_id_time("0" * 31) is None  # another length
    assert route_id_time("z" * 32) is None  # not hex
