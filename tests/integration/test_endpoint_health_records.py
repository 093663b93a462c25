"""Endpoint health on the subscription item, against moto's server: the conditional writes that
make each state change once, and the subscription store keeping them through its own writes."""

from __future__ import annotations

import threading
from datetime import timedelta

import boto3
import pytest
from jobhooks.endpoint_health.model import EndpointHealth
from jobhooks.endpoint_health.owed import OwedNotification
from jobhooks.endpoint_health.store import HealthRecords
from jobhooks.subscriptions.model import SubscriptionStatus
from jobhooks.subscriptions.store import SubscriptionStore
from jobhooks_tools.local.moto_server import MotoServer

from tests.integration.test_subscription_store import (
    T0,
    TABLE,
    FakeClock,
    Local,
    create_subscriptions_table,
)


@pytest.fixture
def local(aws: MotoServer) -> Local:
    dynamodb = boto3.client("dynamodb")
    kms = boto3.client("kms")
    create_subscriptions_table(dynamodb)
    key_id = kms.create_key(Description="jobhooks subscription secrets")["KeyMetadata"]["KeyId"]
    return Local(dynamodb, kms, key_id, FakeClock())


@pytest.fixture
def store(local: Local) -> SubscriptionStore:
    return local.store()


@pytest.fixture
def records(local: Local) -> HealthRecords:
    return HealthRecords(TABLE, local.dynamodb)


def new_subscription(store: SubscriptionStore) -> str:
    return store.create("acme", "https://hooks.example.com/a").subscription.subscription_id


def test_failures_are_counted_on_the_subscription_and_read_with_it(
    store: SubscriptionStore, records: HealthRecords
) -> None:
    subscription_id = new_subscription(store)
    assert store.get(subscription_id).health == EndpointHealth()

    records.record_failure(subscription_id, T0)
    after = records.record_failure(subscription_id, T0 + timedelta(seconds=5))

    assert after == (EndpointHealth(consecutive_failures=2, failing_since=T0), True)
    assert store.get(subscription_id).health == after[0]
    assert [s.health for s in store.matching("acme", "job.completed")] == [after[0]]


def test_concurrent_writers_mark_failing_once_and_clear_once(
    store: SubscriptionStore, records: HealthRecords
) -> None:
    subscription_id = new_subscription(store)
    for _ in range(5):
        records.record_failure(subscription_id, T0)
    marked: list[bool] = []
    cleared: list[EndpointHealth | None] = []

    def race(action: object) -> None:
        threads = [threading.Thread(target=action) for _ in range(8)]  # type: ignore[arg-type]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    race(lambda: marked.append(records.mark_failing(subscription_id, 5)))
    race(lambda: cleared.append(records.clear_after_success(subscription_id)))

    assert marked.count(True) == 1
    [ended] = [health for health in cleared if health is not None]
    assert ended == EndpointHealth(consecutive_failures=5, failing_since=T0, failing=True)
    assert store.get(subscription_id).health == EndpointHealth()


def test_a_run_below_the_threshold_is_not_marked(
    store: SubscriptionStore, records: HealthRecords
) -> None:
    subscription_id = new_subscription(store)
    records.record_failure(subscription_id, T0)
    assert records.mark_failing(subscription_id, 2) is False


def test_a_deleted_subscription_is_not_recreated_by_a_failure(
    store: SubscriptionStore, records: HealthRecords, local: Local
) -> None:
    subscription_id = new_subscription(store)
    store.delete(subscription_id)

    assert records.record_failure(subscription_id, T0) is None
    assert records.clear_after_success(subscription_id) is None
    assert "Item" not in local.dynamodb.get_item(
        TableName=TABLE, Key={"subscription_id": {"S": subscription_id}}
    )


def test_the_stores_writes_keep_the_health_and_re_enabling_clears_it(
    store: SubscriptionStore, records: HealthRecords
) -> None:
    subscription_id = new_subscription(store)
    stale = store.get(subscription_id)
    records.record_failure(subscription_id, T0)

    # Read before the failure was counted: the revision check makes it read again.
    store.update(subscription_id, description="pager")
    assert store.get(subscription_id).health.consecutive_failures == 1
    assert stale.revision < store.get(subscription_id).revision

    store.update(subscription_id, status="disabled")
    assert store.get(subscription_id).health.consecutive_failures == 1
    store.update(subscription_id, status="active")
    assert store.get(subscription_id).health == EndpointHealth()


def test_disable_once_tells_the_one_caller_that_disabled_it(store: SubscriptionStore) -> None:
    subscription_id = new_subscription(store)
    results = []
    threads = [
        threading.Thread(
            target=lambda: results.append(store.disable_once(subscription_id, "answered 410"))
        )
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    [disabled] = [result for result in results if result is not None]
    assert disabled.status is SubscriptionStatus.DISABLED
    assert store.disable(subscription_id, "again").disabled_reason == "answered 410"


def test_a_sustained_failure_disable_yields_to_a_success_that_ended_the_run(
    store: SubscriptionStore, records: HealthRecords
) -> None:
    subscription_id = new_subscription(store)
    health, _ = records.record_failure(subscription_id, T0) or (None, None)
    assert health is not None
    records.clear_after_success(subscription_id)

    assert (
        store.disable_once(subscription_id, "failing", while_failing_since=health.failing_since)
        is None
    )
    assert store.get(subscription_id).is_active


def owed_notification(subscription_id: str, key: str = "disabled.1") -> OwedNotification:
    return OwedNotification(
        tenant_id="acme",
        type="endpoint.disabled",
        data={"subscription_id": subscription_id, "reason": "gone"},
        about_subscription=subscription_id,
        key=f"{subscription_id}.{key}",
        at=T0,
    )


def test_an_owed_notification_is_kept_through_the_stores_writes_until_sent(
    store: SubscriptionStore, records: HealthRecords
) -> None:
    subscription_id = new_subscription(store)
    owed = owed_notification(subscription_id)
    stale = store.get(subscription_id)

    assert records.owe(subscription_id, owed)
    records.owe(subscription_id, owed)  # owing it again is one notification
    assert store.get(subscription_id).health.owed == (owed,)
    assert [s.health.owed for s in store.matching("acme", "job.completed")] == [(owed,)]

    # A management write that read the item before does not write it away, nor does a
    # disable, a re-enable (which clears the run of failures) or a counted failure.
    store.update(subscription_id, description="pager")
    store.update(subscription_id, status="disabled")
    store.update(subscription_id, status="active")
    records.record_failure(subscription_id, T0)
    assert store.get(subscription_id).health.owed == (owed,)
    assert stale.revision < store.get(subscription_id).revision

    assert records.sent_owed(subscription_id, owed)
    assert not records.sent_owed(subscription_id, owed)  # another sender removed it first
    assert store.get(subscription_id).health == EndpointHealth(
        consecutive_failures=1, failing_since=T0
    )


def test_sending_one_owed_notification_leaves_a_newer_one_owed(
    store: SubscriptionStore, records: HealthRecords
) -> None:
    subscription_id = new_subscription(store)
    first, second = owed_notification(subscription_id, "a"), owed_notification(subscription_id, "b")
    records.owe(subscription_id, first)
    records.owe(subscription_id, second)

    records.sent_owed(subscription_id, first)

    assert store.get(subscription_id).health.owed == (second,)


def test_a_deleted_subscription_owes_nothing(
    store: SubscriptionStore, records: HealthRecords
) -> None:
    subscription_id = new_subscription(store)
    store.delete(subscription_id)
    assert not records.owe(subscription_id, owed_notification(subscription_id))
