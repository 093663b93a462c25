"""Idle webhook connections a warm deliver function may use again (issue 14: a new TLS
connection per POST is about 1 KB of the ~2.1 KB of egress a POST costs).

A connection is kept only under the key it was opened for: scheme, URL host, port, the address
the network policy checked before connecting, and the TLS server name. The client looks it up
with the address of the *current* policy check, so a new DNS answer (another address, or one
the policy now refuses) never finds an old connection. Whoever takes a connection owns it until
it gives it back; concurrent POSTs to one receiver each get their own.

Bounded on purpose: `max_per_key` idle connections per key (one unless the owner says
otherwise: the deliver function keeps as many as it POSTs at once), `max_idle` in all (the least
recently kept goes first), and none idle for `idle_seconds`: receivers and load balancers
commonly close idle keep-alive connections after 60 s, and a connection they closed is one the
next POST must notice before it writes to it.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Final, Generic, NamedTuple, Protocol, TypeVar

DEFAULT_MAX_PER_KEY: Final = 1
DEFAULT_MAX_IDLE: Final = 32
DEFAULT_IDLE_SECONDS: Final = 30.0


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


class ConnectionKey(NamedTuple):
    """What a kept connection was opened for; reuse needs every part to match."""

    scheme: str
    host: str
    port: int
    address: str  # the address the network policy checked before this connection was made
    server_name: str | None  # the name TLS verified; None over plain http


class IdleConnections(Generic[C]):
    """At most `max_per_key` idle connections per key and `max_idle` in all (the least recently
    kept is closed first), none older than `idle_seconds`."""

    def __init__(
        self,
        *,
        max_per_key: int = DEFAULT_MAX_PER_KEY,
        max_idle: int = DEFAULT_MAX_IDLE,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`clock` is wall time on purpose: a Lambda execution environment is frozen between
        invocations, and a monotonic clock need not count the frozen minutes the receiver did."""
        if max_per_key < 0 or max_idle < 0 or idle_seconds < 0:
            raise ValueError("max_per_key, max_idle and idle_seconds must not be negative")
        self.max_per_key = max_per_key
        self.max_idle = max_idle
        self.idle_seconds = idle_seconds
        self._clock = clock
        # Oldest first; the counter tells apart several connections kept for one key.
        self._idle: OrderedDict[tuple[ConnectionKey, int], tuple[C, float]] = OrderedDict()
        self._kept = itertools.count()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._idle)

    def take(self, key: ConnectionKey) -> C | None:
        """The most recently kept connection for `key`, now the caller's; `None` if there is
        none that has been idle less than `idle_seconds` (those that have are closed)."""
        now = self._clock()
        found: C | None = None
        stale: list[C] = []
        with self._lock:
            for entry in reversed([entry for entry in self._idle if entry[0] == key]):
                connection, idle_since = self._idle[entry]
                if not self._fresh(idle_since, now):
                    del self._idle[entry]
                    stale.append(connection)
                elif found is None:
                    del self._idle[entry]
                    found = connection
        for connection in stale:
            connection.close()
        return found

    def give_back(self, key: ConnectionKey, connection: C) -> None:
        """Keep `connection` for a next POST to `key`. Beyond `max_per_key` the oldest for the
        key is closed, beyond `max_idle` the oldest overall, and any idle too long."""
        now = self._clock()
        surplus: list[C] = []
        with self._lock:
            self._idle[(key, next(self._kept))] = (connection, now)
            same_key = [entry for entry in self._idle if entry[0] == key]
            for entry in same_key[: max(0, len(same_key) - self.max_per_key)]:
                surplus.append(self._idle.pop(entry)[0])
            for entry, (kept, idle_since) in list(self._idle.items()):
                if not self._fresh(idle_since, now):
                    del self._idle[entry]
                    surplus.append(kept)
            while len(self._idle) > self.max_idle:
                surplus.append(self._idle.popitem(last=False)[1][0])
        for stale in surplus:
            stale.close()

    def _fresh(self, idle_since: float, now: float) -> bool:
        # A clock set back makes the age negative: that proves nothing, so it counts as stale.
        return 0.0 <= now - idle_since < self.idle_seconds

    def close(self) -> None:
        """Close every idle connection."""
        with self._lock:
            idle = [connection for connection, _ in self._idle.values()]
            self._idle.clear()
        for connection in idle:
            connection.close()
