"""The deliver function's caps (jobhooks.delivery.deliver): POSTs at once per endpoint and per
tenant, so one tenant's slow endpoints never take every worker of a batch."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from jobhooks.delivery.deliver import Deliverer
from jobhooks.delivery.model import (
    DeliveryAttempt,
    DeliveryRecord,
    DeliveryStatus,
    PostResult,
)
from jobhooks.delivery.parking import ParkingSummary
from jobhooks.delivery_task import DeliveryTask, delivery_task_for
from jobhooks.subscriptions import EventType, Subscription
from jobhooks.webhook_signature import generate_secret

NOW = datetime(2026, 7, 13, 18, 4, 11, tzinfo=UTC)


class Log:
    def find(self, delivery_id: str) -> DeliveryRecord | None:
        return None

    def find_many(self, delivery_ids: Iterable[str]) -> dict[str, DeliveryRecord]:
        return {}

    def record_attempt(
        self,
        task: DeliveryTask,
        status: DeliveryStatus,
        attempt: DeliveryAttempt | None = None,
        *,
        reason: str | None = None,
        message_id: str | None = None,
        logged_attempts: int = 0,
    ) -> bool:
        return True

    def append_attempt(self, task: DeliveryTask, attempt: DeliveryAttempt) -> None:
        return None


class Directory:
    def __init__(self, subscriptions: list[Subscription]) -> None:
        self.by_id = {s.subscription_id: s for s in subscriptions}

    def get(self, subscription_id: str, *, tenant_id: str | None = None) -> Subscription:
        return self.by_id[subscription_id]

    def signing_secrets(self, subscription: Subscription, now: datetime | None = None) -> list[str]:
        return [generate_secret()]

    def disable_once(
        self,
        subscription_id: str,
        reason: str,
        *,
        tenant_id: str | None = None,
        while_failing_since: datetime | None = None,
    ) -> Subscription | None:
        raise AssertionError("no 410 here")


class Receivers:
    """Answers 200 after `seconds`; counts the POSTs in flight per URL and the most at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.now: Counter[str] = Counter()
        self.most: Counter[str] = Counter()
        self.first_at: dict[str, float] = {}
        self._lock = threading.Lock()

    def post(
        self, url: str, body: bytes, headers: Mapping[str, str], *, timeout: float | None = None
    ) -> PostResult:
        with self._lock:
            self.first_at.setdefault(url, time.monotonic())
            self.now[url] += 1
            self.most[url] = max(self.most[url], self.now[url])
        time.sleep(self.seconds)
        with self._lock:
            self.now[url] -= 1
        return PostResult(200, None, None, round(self.seconds * 1000))


class Nowhere:
    def hide(self, receipt_handle: str, seconds: int) -> None:
        raise AssertionError("nothing is retried here")

    def hide_many(self, hides: Sequence[tuple[str, int]]) -> None:
        raise AssertionError("nothing is retried here")

    def park(self, body: str, summary: ParkingSummary) -> str:
        raise AssertionError("nothing is parked here")


def subscription(tenant: str, n: int) -> Subscription:
    return Subscription(
        subscription_id=f"sub_{tenant}_{n}",
        tenant_id=tenant,
        url=f"https://{tenant}-{n}.example/hook",
        event_types=(EventType.JOB_COMPLETED,),
        created_at=NOW,
        updated_at=NOW,
        data_key=b"",
    )


def record(made: Subscription, n: int) -> dict[str, Any]:
    task = delivery_task_for(
        event_id=f"fetcher.job.completed.e{n}",
        tenant_id=made.tenant_id,
        event_type="job.completed",
        payload="{}",
        subscription_id=made.subscription_id,
    )
    return {
        "messageId": f"m-{made.subscription_id}-{n}",
        "receiptHandle": "r",
        "body": task.to_json(),
    }


def test_a_batch_posts_at_most_the_cap_to_one_endpoint_and_one_tenant_at_once() -> None:
    noisy = [subscription("noisy", n) for n in range(2)]
    quiet = subscription("quiet", 0)
    receivers = Receivers(0.2)
    deliverer = Deliverer(
        attempt_log=Log(),
        subscriptions=Directory([*noisy, quiet]),
        client=receivers,
        queue=Nowhere(),
        dead_letters=Nowhere(),
        concurrency=10,
        max_per_endpoint=2,
        max_per_tenant=3,
    )
    # Nine records of the noisy tenant's two endpoints first, the quiet tenant's one last.
    records = [record(noisy[n % 2], n) for n in range(9)] + [record(quiet, 0)]
    try:
        started = time.monotonic()
        answer = deliverer.deliver_batch({"Records": records})
        took = time.monotonic() - started
    finally:
        deliverer.close()

    assert answer == {"batchItemFailures": []}
    assert receivers.most[noisy[0].url] <= 2 and receivers.most[noisy[1].url] <= 2
    assert receivers.most[noisy[0].url] + receivers.most[noisy[1].url] >= 3
    assert sum(receivers.now.values()) == 0
    # The quiet tenant's record came last, yet it did not wait for the noisy tenant's waves.
    assert receivers.first_at[quiet.url] - started < 0.15
    # Three waves of the noisy tenant's three at a time (0.6 s), not one of ten.
    assert took >= 0.55


def test_without_caps_a_batch_posts_everything_at_once() -> None:
    noisy = subscription("noisy", 0)
    receivers = Receivers(0.2)
    deliverer = Deliverer(
        attempt_log=Log(),
        subscriptions=Directory([noisy]),
        client=receivers,
        queue=Nowhere(),
        dead_letters=Nowhere(),
        concurrency=10,
    )
    try:
        deliverer.deliver_batch({"Records": [record(noisy, n) for n in range(6)]})
    finally:
        deliverer.close()
    assert receivers.most[noisy.url] == 6
