"""The shovel's own delivery limit: how often the same message came back.

A quorum queue's `x-delivery-limit` makes the broker dead-letter a message it delivered too
often. Classic queues have no such limit, a quorum queue declared before the shovel set one
has none either, and RabbitMQ 4.3 and later no longer count a delivery that came back because
its connection closed. So each consumer also counts, in memory, the deliveries of each message
that arrive marked `redelivered`; past the limit the consumer does not handle the message again
but rejects it without requeue, and the broker dead-letters it to the parking queue.

A message is recognized by a digest of its exchange, routing key, `ce-id` and body (a
duplicate of the same event counts as the same message). The count lives as long as the
process; a message is forgotten once it is acked or parked, and the oldest are forgotten first
when more than `capacity` are remembered.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

from jobhooks_tools.shovel.forwarding import Delivery

_DEFAULT_CAPACITY = 10_000


class RedeliveryCounter:
    """Not thread-safe: one per consumer, used on its connection thread."""

    def __init__(self, limit: int, capacity: int = _DEFAULT_CAPACITY) -> None:
        self.limit = limit
        self.capacity = capacity
        self._counts: OrderedDict[bytes, int] = OrderedDict()

    def came_back(self, delivery: Delivery) -> int:
        """Counts one more redelivery of this message; returns how many have been seen."""
        key = _identity(delivery)
        count = self._counts.pop(key, 0) + 1
        self._counts[key] = count
        if len(self._counts) > self.capacity:
            self._counts.popitem(last=False)
        return count

    def exceeded(self, count: int) -> bool:
        return count > self.limit

    def forget(self, delivery: Delivery) -> None:
        """The message was acked or parked: it will not come back."""
        if delivery.redelivered:
            self._counts.pop(_identity(delivery), None)

    def __len__(self) -> int:
        return len(self._counts)


def _identity(delivery: Delivery) -> bytes:
    digest = hashlib.blake2b(digest_size=16)
    for part in (delivery.exchange, delivery.routing_key, delivery.ce_id or ""):
        # pika leaves a routing key that is not UTF-8 as bytes.
        octets = part if isinstance(part, bytes) else part.encode("utf-8", "surrogatepass")
        digest.update(len(octets).to_bytes(4, "big") + octets)
    digest.update(delivery.body)
    return digest.digest()
