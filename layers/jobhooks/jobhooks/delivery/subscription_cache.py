"""The deliver function's subscription cache: each delivery's read of its subscription, kept a
few seconds in a warm process, and kept through the writes that process makes to it.

Every delivery needs its subscription (URL, status, secrets, endpoint health). A failing
endpoint's deliveries come back together on the retry schedule, and each failed attempt counts
one failure on the subscription's item (`endpoint_health.store.HealthRecords.record_failure`),
an UpdateItem that returns the whole item as it is after the write. That item is as fresh as a
strongly consistent read, so it is put in the cache instead of the cache being dropped: the next
retries to the endpoint need no GetItem (one AWS call fewer per retried delivery, and less for
the tenants beside a failing one to wait behind; docs/performance.md).

Why a cached subscription is safe (several Lambda instances, at-least-once SQS):

- an entry lasts `ttl_seconds` from the moment its request was *sent* (`read_at`), not from when
  it was put: a change another process makes (an operator's disable, a rotation, another
  instance's sustained-failure disable) is seen at most `ttl_seconds` late, the bound
  docs/delivery.md has always given, whether the entry came from a read or a failure's write;
- a change this process makes is seen at once: every write of it that may change what a
  delivery does (a disable, a 410's disable, the failing mark, a cleared run, an owed
  notification kept or sent) forgets the entry and sets a floor: a read or write whose request
  was sent before the forget (so may predate the change; another thread's, still in flight) is
  never put afterwards;
- of two items, the one of the higher `revision` (every write of the item moves it) wins, so
  two failures settled at once cannot put the older item over the newer;
- a disabled subscription is never turned into a `skipped` delivery from the cache: the deliver
  function reads it afresh first (`deliver`); and a delivery whose entry shows it active is the
  case the bound above covers.

Thread safe: a batch's records settle on a pool. The clock is injectable (monotonic seconds).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Final

from jobhooks.subscriptions.model import Subscription

if TYPE_CHECKING:
    from jobhooks.delivery.ports import SubscriptionDirectory
    from jobhooks.endpoint_health.model import EndpointHealth
    from jobhooks.endpoint_health.owed import OwedNotification
    from jobhooks.endpoint_health.store import HealthRecords

# Bounds the memory of a process that delivers to many endpoints (entries and floors alike).
MAX_ENTRIES: Final = 4096


class SubscriptionCache:
    """Subscriptions by id, each until `ttl_seconds` after the request that returned it."""

    def __init__(
        self, ttl_seconds: float, *, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl_seconds = ttl_seconds
        self.monotonic = monotonic
        self._entries: dict[str, tuple[float, Subscription]] = {}  # read_at, subscription
        self._floors: dict[str, float] = {}  # when an entry was last forgotten
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.ttl_seconds > 0

    def get(self, subscription_id: str) -> Subscription | None:
        if not self.enabled:
            return None
        with self._lock:
            entry = self._entries.get(subscription_id)
            if entry is None or self.monotonic() >= entry[0] + self.ttl_seconds:
                return None
            return entry[1]

    def put(self, subscription: Subscription, *, read_at: float) -> bool:
        """Keep `subscription`, returned by a request sent at `read_at` (monotonic); False
        when it is not kept: too old, sent before a forget, or older than the entry held."""
        if not self.enabled:
            return False
        subscription_id = subscription.subscription_id
        with self._lock:
            now = self.monotonic()
            if now >= read_at + self.ttl_seconds:
                return False
            if read_at <= self._floors.get(subscription_id, float("-inf")):
                return False  # sent before this process changed it: may predate the change
            held = self._entries.get(subscription_id)
            if held is not None and now < held[0] + self.ttl_seconds:
                held_at, held_subscription = held
                if held_subscription.revision > subscription.revision:
                    return False
                if held_subscription.revision == subscription.revision and held_at >= read_at:
                    return False  # the same item, read later: keep the longer-lived one
            if len(self._entries) >= MAX_ENTRIES:
                self._entries.clear()
            self._entries[subscription_id] = (read_at, subscription)
            return True

    def forget(self, subscription_id: str) -> None:
        """This process changed the subscription (or learned it changed): drop the entry, and
        refuse every item whose request was sent before now."""
        with self._lock:
            self._entries.pop(subscription_id, None)
            if len(self._floors) >= MAX_ENTRIES:
                # A floor older than the TTL refuses nothing `put` would not refuse anyway.
                horizon = self.monotonic() - self.ttl_seconds
                self._floors = {k: v for k, v in self._floors.items() if v > horizon}
                if len(self._floors) >= MAX_ENTRIES:
                    self._floors.clear()
                    self._entries.clear()  # no entry may outlive the floor that guards it
            self._floors[subscription_id] = self.monotonic()

    def kept_since(self, subscription_id: str, since: float) -> bool:
        """Whether the entry held was returned by a request sent at or after `since`."""
        with self._lock:
            entry = self._entries.get(subscription_id)
            return entry is not None and entry[0] >= since


class CacheKeepingSubscriptions:
    """The subscription directory the deliver function POSTs and disables through: a disable
    (a 410, or the sustained-failure rule) forgets the cached subscription at once."""

    def __init__(self, directory: SubscriptionDirectory, cache: SubscriptionCache) -> None:
        self.directory = directory
        self.cache = cache

    def get(self, subscription_id: str, *, tenant_id: str | None = None) -> Subscription:
        read_at = self.cache.monotonic()
        subscription = self.directory.get(subscription_id, tenant_id=tenant_id)
        self.cache.put(subscription, read_at=read_at)
        return subscription

    def signing_secrets(self, subscription: Subscription, now: datetime | None = None) -> list[str]:
        return self.directory.signing_secrets(subscription, now)

    def disable_once(
        self,
        subscription_id: str,
        reason: str,
        *,
        tenant_id: str | None = None,
        while_failing_since: datetime | None = None,
    ) -> Subscription | None:
        try:
            return self.directory.disable_once(
                subscription_id,
                reason,
                tenant_id=tenant_id,
                while_failing_since=while_failing_since,
            )
        finally:
            # Disabled by this call or before it (None), or a write that failed halfway: the
            # next delivery reads it afresh either way.
            self.cache.forget(subscription_id)


class CacheKeepingHealthRecords:
    """`HealthRecords` whose writes keep the cache right: a failure's write puts the item it
    returns; every other write forgets the entry (module docstring)."""

    def __init__(self, records: HealthRecords, cache: SubscriptionCache) -> None:
        self.records = records
        self.cache = cache

    def record_failure(
        self, subscription_id: str, at: datetime
    ) -> tuple[EndpointHealth, bool] | None:
        # Imported here: the subscription store's codec is only needed once a failure is counted.
        from jobhooks.endpoint_health.store import health_from_item
        from jobhooks.subscriptions.store import subscription_from_item

        read_at = self.cache.monotonic()
        item = self.records.record_failure_item(subscription_id, at)
        if item is None:
            self.cache.forget(subscription_id)  # deleted meanwhile
            return None
        try:
            self.cache.put(subscription_from_item(item), read_at=read_at)
        except (KeyError, ValueError, TypeError):
            self.cache.forget(subscription_id)  # not a whole subscription item: read it again
        return health_from_item(item), item.get("status", {}).get("S") == "active"

    def mark_failing(self, subscription_id: str, failing_after: int) -> bool:
        try:
            return self.records.mark_failing(subscription_id, failing_after)
        finally:
            self.cache.forget(subscription_id)

    def clear_after_success(self, subscription_id: str) -> EndpointHealth | None:
        try:
            return self.records.clear_after_success(subscription_id)
        finally:
            self.cache.forget(subscription_id)

    def owe(self, subscription_id: str, notification: OwedNotification) -> bool:
        try:
            return self.records.owe(subscription_id, notification)
        finally:
            self.cache.forget(subscription_id)

    def sent_owed(self, subscription_id: str, notification: OwedNotification) -> bool:
        try:
            return self.records.sent_owed(subscription_id, notification)
        finally:
            self.cache.forget(subscription_id)
