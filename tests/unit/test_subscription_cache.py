"""The deliver function's subscription cache: how long an entry lives, and which items it refuses
(docs/delivery.md, "The subscription cache")."""

from __future__ import annotations

from datetime import UTC, datetime

from jobhooks.delivery.subscription_cache import SubscriptionCache
from jobhooks.subscriptions.model import EventType, Subscription, SubscriptionStatus

T0 = datetime(2026, 7, 13, 18, 0, tzinfo=UTC)


class Ticks:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def subscription(
    revision: int = 1, status: SubscriptionStatus = SubscriptionStatus.ACTIVE
) -> Subscription:
    return Subscription(
        subscription_id="sub_a",
        tenant_id="acme",
        url="https://hooks.example.com/a",
        event_types=(EventType.JOB_COMPLETED,),
        status=status,
        created_at=T0,
        updated_at=T0,
        data_key=b"k",
        revision=revision,
    )


def test_an_entry_lives_ttl_seconds_from_when_its_request_was_sent() -> None:
    ticks = Ticks()
    cache = SubscriptionCache(2.0, monotonic=ticks)
    sent = ticks.now
    ticks.now += 1.5  # a slow call: the item may be 1.5 s old already
    assert cache.put(subscription(), read_at=sent)
    assert cache.get("sub_a") == subscription()
    ticks.now += 0.5
    assert cache.get("sub_a") is None  # 2 s after the request, not after the put


def test_an_item_whose_request_was_sent_before_a_forget_is_refused() -> None:
    # Another thread's failure write was in flight while this thread disabled the endpoint:
    # the item it returns may show it active, and must never be kept.
    ticks = Ticks()
    cache = SubscriptionCache(30.0, monotonic=ticks)
    in_flight_since = ticks.now
    ticks.now += 0.1
    cache.forget("sub_a")  # the disable
    ticks.now += 0.1
    assert not cache.put(subscription(revision=5), read_at=in_flight_since)
    assert cache.get("sub_a") is None
    # A request sent after the forget sees the change: kept.
    read_after = ticks.now
    assert cache.put(
        subscription(revision=7, status=SubscriptionStatus.DISABLED), read_at=read_after
    )
    assert cache.get("sub_a") == subscription(revision=7, status=SubscriptionStatus.DISABLED)


def test_an_older_revision_never_replaces_a_newer_one() -> None:
    ticks = Ticks()
    cache = SubscriptionCache(30.0, monotonic=ticks)
    first_sent = ticks.now
    ticks.now += 0.1
    assert cache.put(subscription(revision=9), read_at=ticks.now)
    assert not cache.put(subscription(revision=8), read_at=first_sent)  # settled later
    assert cache.get("sub_a") == subscription(revision=9)
    assert cache.put(subscription(revision=10), read_at=first_sent)
    assert cache.get("sub_a") == subscription(revision=10)


def test_kept_since_tells_an_entry_put_after_a_moment_from_an_older_one() -> None:
    ticks = Ticks()
    cache = SubscriptionCache(30.0, monotonic=ticks)
    cache.put(subscription(revision=1), read_at=ticks.now)
    ticks.now += 1
    attempt_started = ticks.now
    assert not cache.kept_since("sub_a", attempt_started)
    ticks.now += 1
    cache.put(subscription(revision=2), read_at=ticks.now)
    assert cache.kept_since("sub_a", attempt_started)


def test_a_zero_ttl_keeps_nothing() -> None:
    ticks = Ticks()
    cache = SubscriptionCache(0.0, monotonic=ticks)
    assert not cache.put(subscription(), read_at=ticks.now)
    assert cache.get("sub_a") is None
