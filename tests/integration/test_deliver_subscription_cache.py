"""The deliver function's subscription cache through its production wiring (`build_deliverer`),
against moto: a failing endpoint's retries read its subscription once per cache period, not once
each, and a disable this process makes is seen by its very next delivery.

Every AWS call the deliverer makes is counted at botocore's one entry point for API calls, so
the count holds whatever clients the wiring makes.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import botocore.client
import pytest
from jobhooks.delivery.model import DeliveryStatus
from jobhooks.delivery.settings import DeliverSettings
from jobhooks.delivery.wiring import build_deliverer
from jobhooks.subscriptions import SubscriptionStatus
from jobhooks_tools.local.event_source import SqsEventSource
from jobhooks_tools.local.template import LocalResources

from tests.integration.deliver_harness import DeliveryBench, Reply, delivery_bench

pytestmark = pytest.mark.timeout(60)

# The event source's own calls (Lambda's, not the function's).
EVENT_SOURCE_CALLS = {"ReceiveMessage", "DeleteMessage", "DeleteMessageBatch"}


class AwsCalls:
    """Every AWS API call of this process, by operation and the table or queue it names."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counted: Counter[tuple[str, str]] = Counter()
        self.counting = False
        self._lock = threading.Lock()
        make_api_call = botocore.client.BaseClient._make_api_call

        def counted(client: Any, operation: str, params: Any) -> Any:
            if self.counting and operation not in EVENT_SOURCE_CALLS:
                tables = list(params.get("RequestItems") or ())  # BatchGetItem's
                target = str(params.get("TableName") or params.get("QueueUrl") or tables[0])
                with self._lock:
                    self.counted[(operation, target.rsplit("/", 1)[-1])] += 1
            return make_api_call(client, operation, params)

        monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", counted)


@pytest.fixture
def bench(stack: LocalResources, monkeypatch: pytest.MonkeyPatch) -> Iterator[DeliveryBench]:
    with delivery_bench(stack) as bench:
        monkeypatch.setenv("JOBHOOKS_ALLOW_PRIVATE_WEBHOOKS", "true")
        monkeypatch.setenv("JOBHOOKS_DELIVERY_TIMEOUT_SECONDS", "2")
        monkeypatch.setenv("JOBHOOKS_SUBSCRIPTION_CACHE_SECONDS", "30")
        # Every retry at once (the delays are the schedule's business, not this test's).
        monkeypatch.setenv("JOBHOOKS_RETRY_SCHEDULE", "0,0,0,0,0,0,0,0")
        # No `endpoint.failing` mark in these runs: its write forgets the entry, on purpose.
        monkeypatch.setenv("JOBHOOKS_ENDPOINT_FAILING_AFTER", "1000")
        yield bench


def event_source(bench: DeliveryBench, deliverer: Any) -> SqsEventSource:
    return SqsEventSource(
        bench.queue_url,
        lambda event, context: deliverer.deliver_batch(
            event, remaining_ms=context.get_remaining_time_in_millis
        ),
        sqs_client=bench.raw_sqs,
        wait_time_seconds=0,
        function_timeout_seconds=60,
        strict_responses=True,
    )


def test_a_retried_delivery_costs_two_writes_a_share_of_two_batch_calls_and_no_subscription_read(
    bench: DeliveryBench, stack: LocalResources, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = AwsCalls(monkeypatch)
    failing = bench.receiver(default=Reply(500))
    issued = bench.subscribe(failing)
    tasks = [bench.task(issued, event_id=f"fetcher.job.completed.j-{n}") for n in range(4)]
    bench.enqueue(*tasks)
    deliverer = build_deliverer(DeliverSettings.from_env())
    try:
        source = event_source(bench, deliverer)
        first = source.run_once(wait_time_seconds=0)
        assert (first.received, first.failed) == (4, 4)

        calls.counting = True
        retried = source.run_once(wait_time_seconds=0)
        calls.counting = False
    finally:
        deliverer.close()

    assert (retried.received, retried.failed) == (4, 4)
    assert failing.count == 8
    deliveries = stack.table_name("DeliveriesTable")
    subscriptions = stack.table_name("SubscriptionsTable")
    queue = bench.queue_url.rsplit("/", 1)[-1]
    # Per retried delivery: the attempt's record, the endpoint's failure count (whose returned
    # item the cache keeps); for the whole batch: one read of the records for the duplicate
    # checks, one visibility call.
    assert dict(calls.counted) == {
        ("BatchGetItem", deliveries): 1,
        ("UpdateItem", deliveries): 4,
        ("UpdateItem", subscriptions): 4,
        ("ChangeMessageVisibilityBatch", queue): 1,
    }
    assert [bench.record(task).status for task in tasks] == [DeliveryStatus.PENDING] * 4


def test_a_sustained_failure_disable_stops_the_next_delivery_of_the_same_process(
    bench: DeliveryBench, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JOBHOOKS_AUTO_DISABLE_AFTER", "60s")
    failing = bench.receiver(default=Reply(500))
    issued = bench.subscribe(failing)
    subscription_id = issued.subscription.subscription_id
    first = bench.task(issued, event_id="fetcher.job.completed.j-1")
    bench.enqueue(first)
    deliverer = build_deliverer(DeliverSettings.from_env(), clock=bench.clock)
    try:
        source = event_source(bench, deliverer)
        source.run_once(wait_time_seconds=0)  # fails; its write's item (active) is cached
        bench.clock.advance(61)
        # Fails again, every attempt failing for 61 s: the endpoint is disabled by this very
        # process, after the failure's write put the item (still active) in the cache.
        source.run_once(wait_time_seconds=0)
        assert bench.store.get(subscription_id).status is SubscriptionStatus.DISABLED
        assert failing.count == 2

        second = bench.task(issued, event_id="fetcher.job.completed.j-2")
        bench.enqueue(second)
        source.run_once(wait_time_seconds=0)
    finally:
        deliverer.close()

    assert failing.count == 2  # neither the retry nor the new delivery was POSTed
    assert bench.record(second).status is DeliveryStatus.SKIPPED
    assert bench.record(first).status is DeliveryStatus.SKIPPED
