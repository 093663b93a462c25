"""The bounds on kept webhook connections: one per key, a total, an idle limit."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from jobhooks.delivery.keepalive import ConnectionKey, IdleConnections


@dataclass
class Connection:
    name: str
    closed: bool = False

    def close(self) -> None:
        self.closed = True


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def key(address: str = "203.0.113.7", host: str = "hook.example") -> ConnectionKey:
    return ConnectionKey("https", host, 443, address, host)


def test_gives_a_kept_connection_to_one_taker_only() -> None:
    idle: IdleConnections[Connection] = IdleConnections()
    kept = Connection("a")

    idle.give_back(key(), kept)

    assert idle.take(key()) is kept
    assert idle.take(key()) is None
    assert not kept.closed


@pytest.mark.parametrize(
    "other",
    [
        key(address="203.0.113.8"),
        key(host="other.example"),
        ConnectionKey("https", "hook.example", 8443, "203.0.113.7", "hook.example"),
        ConnectionKey("http", "hook.example", 443, "203.0.113.7", None),
        ConnectionKey("https", "hook.example", 443, "203.0.113.7", "other.example"),
    ],
)
def test_needs_every_part_of_the_key_to_match(other: ConnectionKey) -> None:
    idle: IdleConnections[Connection] = IdleConnections()
    idle.give_back(key(), Connection("a"))

    assert idle.take(other) is None
    assert len(idle) == 1


def test_keeps_up_to_max_per_key_for_one_key_the_newest() -> None:
    idle: IdleConnections[Connection] = IdleConnections(max_per_key=2)
    kept = [Connection(str(n)) for n in range(3)]

    for connection in kept:
        idle.give_back(key(), connection)

    assert kept[0].closed and not kept[1].closed and not kept[2].closed
    assert idle.take(key()) is kept[2]  # the most recently kept: the least likely closed
    assert idle.take(key()) is kept[1]
    assert idle.take(key()) is None


def test_take_skips_and_closes_stale_connections_of_the_key() -> None:
    clock = Clock()
    idle: IdleConnections[Connection] = IdleConnections(max_per_key=2, clock=clock)
    stale, fresh = Connection("stale"), Connection("fresh")
    idle.give_back(key(), stale)
    clock.now += 20.0
    idle.give_back(key(), fresh)
    clock.now += 15.0

    assert idle.take(key()) is fresh
    assert stale.closed
    assert len(idle) == 0


def test_keeps_one_connection_per_key_the_newest() -> None:
    idle: IdleConnections[Connection] = IdleConnections()
    older, newer = Connection("older"), Connection("newer")

    idle.give_back(key(), older)
    idle.give_back(key(), newer)

    assert older.closed
    assert idle.take(key()) is newer
    assert len(idle) == 0


def test_closes_the_least_recently_kept_beyond_the_total() -> None:
    idle: IdleConnections[Connection] = IdleConnections(max_idle=2)
    first, second, third = Connection("1"), Connection("2"), Connection("3")

    idle.give_back(key("203.0.113.1"), first)
    idle.give_back(key("203.0.113.2"), second)
    idle.give_back(key("203.0.113.3"), third)

    assert first.closed and not second.closed and not third.closed
    assert idle.take(key("203.0.113.1")) is None
    assert idle.take(key("203.0.113.2")) is second


def test_closes_a_connection_idle_for_the_limit_instead_of_giving_it() -> None:
    clock = Clock()
    idle: IdleConnections[Connection] = IdleConnections(idle_seconds=30.0, clock=clock)
    recent, stale = Connection("recent"), Connection("stale")
    idle.give_back(key("203.0.113.1"), recent)
    idle.give_back(key("203.0.113.2"), stale)

    clock.now += 29.9
    assert idle.take(key("203.0.113.1")) is recent
    clock.now += 0.1
    assert idle.take(key("203.0.113.2")) is None
    assert stale.closed


def test_closes_connections_that_went_stale_when_another_is_kept() -> None:
    clock = Clock()
    idle: IdleConnections[Connection] = IdleConnections(idle_seconds=30.0, clock=clock)
    stale = Connection("stale")
    idle.give_back(key("203.0.113.1"), stale)

    clock.now += 31.0
    idle.give_back(key("203.0.113.2"), Connection("new"))

    assert stale.closed
    assert len(idle) == 1


def test_a_clock_set_back_makes_a_connection_stale() -> None:
    clock = Clock()
    idle: IdleConnections[Connection] = IdleConnections(clock=clock)
    kept = Connection("a")
    idle.give_back(key(), kept)

    clock.now -= 3_600.0

    assert idle.take(key()) is None
    assert kept.closed


def test_close_closes_every_idle_connection() -> None:
    idle: IdleConnections[Connection] = IdleConnections()
    kept = [Connection(str(n)) for n in range(3)]
    for n, connection in enumerate(kept):
        idle.give_back(key(f"203.0.113.{n}"), connection)

    idle.close()

    assert all(connection.closed for connection in kept)
    assert len(idle) == 0


def test_refuses_negative_bounds() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        IdleConnections(max_idle=-1)
    with pytest.raises(ValueError, match="must not be negative"):
        IdleConnections(max_per_key=-1)
