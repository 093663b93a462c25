"""Idle webhook connections a warm deliver function may use again (issue 14: a new TLS
connection per POST is about 1 KB of the ~2.1 KB of egress a POST costs).

A connection is kept only under the key it was opened for: scheme, URL host, port, the address
the network policy checked before connecting, and the TLS server name. The client looks it up
with the address of the *current* policy check, so a new DNS answer (another address, or one
the policy now refuses) never finds an old connection. Whoever takes a connection owns it until
it gives it back; concurrent POSTs to one receiver each get their own.

Bounded on purpose: one idle connection per key, `max_idle` in all (the least recently used goes
first), and none older than `idle_seconds`: receivers and load balancers commonly close idle
keep-alive connections after 60 s, and a connection they closed is one the next POST must
notice before it writes to it.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Final, Generic, NamedTuple, Protocol, TypeVar

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
    """At most one idle connection per key, `max_idle` in all, none older than `idle_seconds`."""

    def __init__(
        self,
        *,
        max_idle: int = DEFAULT_MAX_IDLE,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`clock` is wall time on purpose: a Lambda execution environment is frozen between
        invocations, and a monotonic clock need not count the frozen minutes the receiver did."""
        if max_idle < 0 or idle_seconds < 0:
            raise ValueError("max_idle and idle_seconds must not be negative")
        self.max_idle = max_idle
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._idle: OrderedDict[ConnectionKey, tuple[C, float]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._idle)

    def take(self, key: ConnectionKey) -> C | None:
        """The idle connection kept for `key`, now the caller's; `None` if there is none or
        it has been idle too long (it is closed then)."""
        with self._lock:
            entry = self._idle.pop(key, None)
        if entry is None:
            return None
        connection, idle_since = entry
        if not self._fresh(idle_since, self._clock()):
            connection.close()
            return None
        return connection

    def give_back(self, key: ConnectionKey, connection: C) -> None:
        """Keep `connection` for the next POST to `key`; it replaces an older one for the same
        key, and the least recently used beyond `max_idle` (and any idle too long) are closed."""
        now = self._clock()
        surplus: list[C] = []
        with self._lock:
            replaced = self._idle.pop(key, None)
            if replaced is not None:
                surplus.append(replaced[0])
            self._idle[key] = (connection, now)
            for other, (kept, idle_since) in list(self._idle.items()):
                if not self._fresh(idle_since, now):
                    del self._idle[other]
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
