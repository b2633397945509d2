"""The pure parts of the rate limits (app/limits/): windows, counts, the client's address, and
one replica's decisions on a clock of the test's own (no database: app/limits/limiter.py's
sharing is tested in tests/api/test_rate_limits.py)."""

from __future__ import annotations

import os
import time

import pytest
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from app.db import make_engine, make_session_factory
from app.limits.answer import too_many
from app.limits.client import client_address, networks
from app.limits.counts import (
    Limit,
    Limits,
    Refusal,
    Slot,
    current_only,
    open_windows,
    over,
    seconds_left,
    window_start,
)
from app.limits.limiter import RateLimiter
from app.settings import SettingsError, load_settings


def test_windows_are_aligned_on_the_epoch() -> None:
    assert window_start(119.9, 60) == 60 and window_start(120.0, 60) == 120
    assert window_start(1_000_299, 300) == 1_000_200
    assert seconds_left(61.0, 60) == 59
    assert seconds_left(119.2, 60) == 1  # rounded up: never "retry in 0 s"
    assert seconds_left(119.99, 60) == 1


def test_over_counts_local_and_remote() -> None:
    limit = Limit("client", 10, 60)
    assert not over(limit, 4, 5)  # 4 + 5 + 1 = 10: the tenth is allowed
    assert over(limit, 5, 5)  # the eleventh is not
    assert not over(Limit("client", 0, 60), 10**9, 10**9)  # 0: off


def test_a_closed_window_no_longer_counts_even_if_another_kind_starts_there() -> None:
    limits = [Limit("client", 5, 60), Limit("auth", 5, 300)]
    open_now = open_windows(limits, 700.0)
    assert open_now == {"client": 660, "auth": 600}
    counts = [
        (Slot("client", "a", 600), 9),  # closed, though the auth window starts at 600 too
        (Slot("client", "a", 660), 2),
        (Slot("auth", "a", 600), 3),
        (Slot("key", "k", 660), 1),  # the key limit is off: no window is open for it
    ]
    assert current_only(counts, open_now) == {
        Slot("client", "a", 660): 2,
        Slot("auth", "a", 600): 3,
    }


TRUSTED = networks(["10.0.0.0/8", "fd00::1"])


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        ("203.0.113.7", ["198.51.100.1"], "203.0.113.7"),  # an untrusted peer: header ignored
        ("10.0.0.2", ["198.51.100.1"], "198.51.100.1"),  # a trusted proxy: its hop
        ("10.0.0.2", ["6.6.6.6, 198.51.100.1"], "198.51.100.1"),  # the client's own: ignored
        ("10.0.0.2", ["6.6.6.6", "198.51.100.1, 10.0.0.3"], "198.51.100.1"),  # two lines, 2 hops
        ("10.0.0.2", ["10.0.0.5, 10.0.0.3"], "10.0.0.5"),  # all trusted: the first
        ("10.0.0.2", ["198.51.100.1, garbage"], "10.0.0.2"),  # garbage stops the walk
        ("10.0.0.2", [], "10.0.0.2"),  # no header: the proxy itself
        ("10.0.0.2", ["198.51.100.1:4711"], "198.51.100.1"),  # a port is dropped
        ("fd00::1", ["[2001:db8:1:2::9]:443"], "2001:db8:1:2::/64"),  # IPv6: its /64
        ("2001:db8::1", [], "2001:db8::/64"),
        ("::ffff:203.0.113.7", [], "203.0.113.7"),  # an IPv4 peer on a dual-stack socket
        ("testclient", [], "testclient"),  # not an address: taken as it is
        (None, [], "unknown"),
    ],
)
def test_the_client_address(peer: str | None, forwarded: list[str], client: str) -> None:
    assert client_address(peer, forwarded, TRUSTED) == client


def test_without_trusted_proxies_the_header_is_never_read() -> None:
    assert client_address("10.0.0.2", ["198.51.100.1"], ()) == "10.0.0.2"


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def limiter(clock: Clock, *, client: int = 0, key: int = 0, auth: int = 0) -> RateLimiter:
    limits = Limits(Limit("client", client, 60), Limit("key", key, 60), Limit("auth", auth, 300))
    return RateLimiter(limits, clock=clock)


def test_failed_sign_ins_block_the_client_even_with_a_good_key_until_the_window_ends() -> None:
    clock = Clock(1_000_220.0)  # 20 s into a 300 s window (1,000,200 = 3334 × 300)
    limits = limiter(clock, auth=3)
    for _ in range(3):
        assert limits.admit("198.51.100.1", None) is None
        limits.failed("198.51.100.1")
    assert limits.admit("198.51.100.1", "key-1") == Refusal("auth", 280)
    assert limits.blocked("198.51.100.1") == Refusal("auth", 280)
    assert limits.admit("198.51.100.2", "key-1") is None  # another client
    clock.now += 280
    assert limits.admit("198.51.100.1", "key-1") is None  # a new window


def test_requests_per_client_and_per_key() -> None:
    clock = Clock(1_000_000.0)
    limits = limiter(clock, client=3, key=4)
    assert [limits.admit("a", "k") for _ in range(3)] == [None] * 3
    assert limits.admit("a", "k") == Refusal("client", 20)
    assert limits.admit("b", "k") is None  # the key's fourth
    assert limits.admit("c", "k") == Refusal("key", 20)
    assert limits.count("key", "k") == 4  # refused requests are not counted
    assert limits.admit("c", None) is None  # no key: only the client's limit


def test_all_limits_off_refuse_nothing() -> None:
    limits = limiter(Clock())
    for _ in range(1000):
        limits.failed("a")
        assert limits.admit("a", "k") is None
    assert not limits.limits.on


def test_a_refusal_in_the_one_error_shape() -> None:
    error = too_many(Refusal("auth", 42))
    assert (error.status_code, error.code) == (429, "too_many_requests")
    assert error.headers == {"Retry-After": "42"}
    assert error.details == {"limit": "auth", "retry_after": 42}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("TOOLREACH_"):
            monkeypatch.delenv(key)


@pytest.mark.usefixtures("clean_env")
@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("TOOLREACH_TRUSTED_PROXIES", "10.0.0.0/8,not-a-network"),
        ("TOOLREACH_RATE_LIMIT_PER_CLIENT", "-1"),
        ("TOOLREACH_AUTH_FAILURES_PER_CLIENT", "many"),
        ("TOOLREACH_RATE_LIMIT_WINDOW_SECONDS", "0"),
        ("TOOLREACH_RATE_LIMIT_FLUSH_SECONDS", "0"),
    ],
)
def test_a_bad_limit_setting_stops_start_up(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError, match=variable):
        load_settings(_env_file=None)


@pytest.mark.usefixtures("clean_env")
def test_trusted_proxies_are_a_comma_separated_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLREACH_TRUSTED_PROXIES", "172.28.0.10, fd00::/64")
    settings = load_settings(_env_file=None)
    assert settings.trusted_proxies == ("172.28.0.10", "fd00::/64")
    assert RateLimiter.from_settings(settings).trusted_proxies == networks(
        ["172.28.0.10", "fd00::/64"]
    )


class Sessions:
    """A session factory whose database can be made to fail."""

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self.factory, self.away = factory, False

    def __call__(self) -> Session:
        if self.away:
            raise OperationalError("SELECT 1", {}, Exception("the database is away"))
        return self.factory()


def test_a_failed_flush_keeps_the_counts_and_forgets_the_others(sqlite_url: str) -> None:
    """While the database fails, nothing counted is lost and the decision is local only;
    the next flush that works writes everything (the real thing, frozen and stopped:
    tests/api/test_rate_limits.py)."""
    engine = make_engine(sqlite_url)
    sessions = Sessions(make_session_factory(engine))
    limits = Limits(Limit("client", 0, 60), Limit("key", 0, 60), Limit("auth", 3, 300))
    clock = Clock(time.time())
    other, this = (RateLimiter(limits, sessions, clock=clock) for _ in "ab")  # type: ignore[arg-type]
    try:
        other.failed("198.51.100.1")
        other.flush()
        this.flush()
        assert this.count("auth", "198.51.100.1") == 1  # the other replica's
        sessions.away = True
        this.failed("198.51.100.1")
        with pytest.raises(OperationalError):
            this.flush()
        assert not this.shared
        assert this.count("auth", "198.51.100.1") == 1  # its own only, until it hears again
        sessions.away = False
        this.flush()
        assert this.shared and this.count("auth", "198.51.100.1") == 2
        other.flush()
        assert other.count("auth", "198.51.100.1") == 2  # the failed flush's count arrived
    finally:
        engine.dispose()
