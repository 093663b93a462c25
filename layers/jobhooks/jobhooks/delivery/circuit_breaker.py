"""The first attempts' circuit breaker: a subscription whose receiver just failed is left alone.

Ingest makes the first attempt of every delivery under one deadline shared by the whole batch
(`jobhooks.delivery.first_attempt`). A receiver that hangs would cost every invocation that
deadline, and every other tenant's events in those invocations would wait for it. So a failed or
timed-out first attempt opens the subscription's circuit for `open_seconds` (default 60): while
it is open, the subscription's tasks go straight to the delivery queue with no first attempt,
and the deliver function (its own concurrency, one task at a time) carries the retries. One bad
receiver then costs each warm ingest process at most one deadline a minute.

Per process, not shared: a cold process learns it again with one failed attempt. Thread safe:
the first attempts of a batch run on a pool. The clock is injectable (monotonic seconds).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final

DEFAULT_OPEN_SECONDS: Final = 60.0
# Bounds the memory of a process that sees many failing subscriptions: past this many open
# circuits, the ones that have closed are forgotten first, then the oldest.
MAX_OPEN_CIRCUITS: Final = 4096


class CircuitBreaker:
    """Which subscriptions' circuits are open, and until when."""

    def __init__(
        self,
        open_seconds: float = DEFAULT_OPEN_SECONDS,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if open_seconds < 0:
            raise ValueError("open_seconds must not be negative")
        self.open_seconds = open_seconds
        self._monotonic = monotonic
        self._open_until: dict[str, float] = {}
        self._lock = threading.Lock()

    def is_open(self, subscription_id: str) -> bool:
        """True while a failure of the subscription's first attempt is less than
        `open_seconds` old: its tasks skip the first attempt."""
        with self._lock:
            until = self._open_until.get(subscription_id)
            if until is None:
                return False
            if self._monotonic() < until:
                return True
            del self._open_until[subscription_id]
            return False

    def trip(self, subscription_id: str) -> None:
        """A first attempt to the subscription failed: open its circuit (again) from now."""
        with self._lock:
            now = self._monotonic()
            if len(self._open_until) >= MAX_OPEN_CIRCUITS:
                self._forget_closed(now)
            self._open_until[subscription_id] = now + self.open_seconds

    def _forget_closed(self, now: float) -> None:
        for subscription_id, until in list(self._open_until.items()):
            if until <= now:
                del self._open_until[subscription_id]
        while len(self._open_until) >= MAX_OPEN_CIRCUITS:
            # Dicts keep insertion order: the first entry is the oldest trip still open.
            del self._open_until[next(iter(self._open_until))]
