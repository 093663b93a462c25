"""Deliveries on their way from the AMQP consumers to SQS, and when each one is settled.

A delivery is *in flight* from the moment the consumer hands it over until it is settled:
acknowledged on the broker after SQS accepted it, parked, or given up because the connection
that received it is gone (the broker then redelivers it). A clean shutdown waits for the count
to reach zero, so nothing is acknowledged after the process claims to be done, and nothing that
SQS accepted is left unacknowledged without reason.

Entries SQS refused come back here with a delay instead of holding their sender: one message
SQS keeps refusing must not stop the others from flowing.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from jobhooks_tools.shovel.forwarding import Delivery, SqsEntry


class DeliveryOwner(Protocol):
    """The consumer whose connection received a delivery; only it may ack or park it."""

    vhost: str

    def holds(self, generation: int) -> bool:
        """True while the connection of that generation is open (its delivery tags valid)."""
        ...

    def acknowledge(self, deliveries: Sequence[PendingDelivery]) -> None: ...

    def park(self, deliveries: Sequence[PendingDelivery], reason: str, detail: str) -> None: ...


@dataclass(eq=False, slots=True)
class PendingDelivery:
    owner: DeliveryOwner
    generation: int
    delivery_tag: int
    delivery: Delivery
    entry: SqsEntry
    # SendMessageBatch attempts that did not get this entry accepted.
    attempts: int = 0
    # How often SQS refused it as the sender's fault (a bad message, not an outage).
    sender_faults: int = 0
    # Sent in a batch of its own: SQS refused a whole batch for its content.
    send_alone: bool = False
    settled: bool = False

    @property
    def is_current(self) -> bool:
        return self.owner.holds(self.generation)


class Outbox:
    def __init__(
        self,
        max_batch_entries: int,
        max_batch_bytes: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_batch_entries = max_batch_entries
        self.max_batch_bytes = max_batch_bytes
        self._ready: collections.deque[PendingDelivery] = collections.deque()
        self._delayed: list[tuple[float, int, PendingDelivery]] = []
        self._sequence = itertools.count()
        self._condition = threading.Condition()
        # Only one sender collects a batch at a time, so batches fill up instead of several
        # senders each lingering with one message; sending itself runs in parallel.
        self._collecting = threading.Lock()
        self._in_flight = 0
        self._closed = False
        # Lingering and retry delays read this clock (a test's, to pace a burst exactly).
        self._clock = clock

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def put(self, delivery: PendingDelivery) -> None:
        with self._condition:
            self._in_flight += 1
            self._ready.append(delivery)
            self._condition.notify_all()

    def retry_now(self, deliveries: Iterable[PendingDelivery]) -> None:
        """Back to the front of the line (their sender backs off, not they)."""
        with self._condition:
            self._ready.extendleft(reversed(list(deliveries)))
            self._condition.notify_all()

    def retry_later(self, delivery: PendingDelivery, delay: float) -> None:
        with self._condition:
            ready_at = self._clock() + delay
            heapq.heappush(self._delayed, (ready_at, next(self._sequence), delivery))
            self._condition.notify_all()

    def take_batch(self, linger: float) -> list[PendingDelivery] | None:
        """Up to `max_batch_entries` deliveries within `max_batch_bytes`, waiting up to `linger`
        after the first one for more. Blocks while there is nothing to send; None once closed
        and nothing is left (retries included)."""
        with self._collecting, self._condition:
            while True:
                first = self._pop_current()
                if first is not None:
                    break
                if self._closed and not self._delayed:
                    return None
                self._condition.wait(self._until_next_retry())
            batch = [first]
            if first.send_alone:
                return batch
            size = first.entry.size
            deadline = self._clock() + linger
            while len(batch) < self.max_batch_entries:
                self._promote_due_retries()
                if self._ready:
                    following = self._ready[0]
                    if following.send_alone or size + following.entry.size > self.max_batch_bytes:
                        break
                    item = self._pop_current()
                    if item is not None:
                        batch.append(item)
                        size += item.entry.size
                    continue
                remaining = deadline - self._clock()
                if remaining <= 0 or self._closed:
                    break
                self._condition.wait(remaining)
            return batch

    def settle(self, deliveries: Iterable[PendingDelivery]) -> None:
        """Marks deliveries as done (acked, parked or left to redelivery). Idempotent."""
        with self._condition:
            for delivery in deliveries:
                self._settle(delivery)
            self._condition.notify_all()

    def close(self) -> None:
        """No more deliveries will come; senders finish what is left, then stop."""
        with self._condition:
            self._closed = True
            self._condition.notify_all()

    def abandon(self) -> int:
        """Gives up everything not yet sent (it stays unacked and the broker redelivers it);
        returns how many. Closes the outbox."""
        with self._condition:
            left = [*self._ready, *(entry[2] for entry in self._delayed)]
            self._ready.clear()
            self._delayed.clear()
            for delivery in left:
                self._settle(delivery)
            self._closed = True
            self._condition.notify_all()
            return len(left)

    def wait_until_settled(self, timeout: float) -> bool:
        deadline = self._clock() + timeout
        with self._condition:
            while self._in_flight > 0:
                remaining = deadline - self._clock()
                if remaining <= 0:
                    return False
                self._condition.wait(remaining)
            return True

    # --- internals (the caller holds the condition) -----------------------------------------

    def _settle(self, delivery: PendingDelivery) -> None:
        if not delivery.settled:
            delivery.settled = True
            self._in_flight -= 1

    def _promote_due_retries(self) -> None:
        now = self._clock()
        due = []
        while self._delayed and self._delayed[0][0] <= now:
            due.append(heapq.heappop(self._delayed)[2])
        # Retries go first: they have waited longest.
        self._ready.extendleft(reversed(due))

    def _until_next_retry(self) -> float | None:
        if not self._delayed:
            return None
        return max(0.0, self._delayed[0][0] - self._clock())

    def _pop_current(self) -> PendingDelivery | None:
        # A delivery whose connection is gone can no longer be acknowledged and the broker will
        # redeliver it: sending it would only add a duplicate.
        self._promote_due_retries()
        while self._ready:
            delivery = self._ready.popleft()
            if delivery.is_current and not delivery.settled:
                return delivery
            self._settle(delivery)
            self._condition.notify_all()
        return None
