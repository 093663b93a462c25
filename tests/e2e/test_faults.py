"""Faults while traffic flows: after recovery every valid event is delivered, none is lost.

Each test publishes a steady stream of signed events (each followed by a repairer copy) for two
subscriptions of one tenant, breaks one part of the path a third of the way in, repairs it, and
then checks that every event reached every subscription that matches it, that nothing arrived
that was not sent, and that nothing is left in a queue or a dead-letter queue. The README's
guarantee 1: broker restarts, shovel crashes, receiver outages and AWS errors only delay events.
AWS's throttling and 5xx answers are injected at the botocore layer into the functions' own
calls (`DevStack.faults`, jobhooks_tools/local/faults.py), each kind a function really makes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
from jobhooks_tools.publisher import Copy, sample_traffic
from jobhooks_tools.sample_events import demo_key

from tests.e2e.harness import (
    Bridge,
    Subscription,
    Traffic,
    expected_deliveries,
    unique_tenant,
    wait_until,
)

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

EVENTS = 40
RATE = 20.0  # messages per second: 80 messages (events and copies) over 4 s


# A fault lasts until it was felt (a condition the test polls for), never for a fixed time:
# under load a fixed outage can end before any event met it.
Fault = Callable[[Bridge, Traffic, list[Subscription]], None]


def deliver_everything_despite(bridge: Bridge, fault: Fault) -> list[Subscription]:
    key = demo_key()
    tenant = unique_tenant("faults")
    subscriptions = [
        bridge.subscribe(tenant),
        bridge.subscribe(tenant, event_types=["job.completed"]),
    ]
    traffic = list(sample_traffic(key, count=EVENTS, tenants=(tenant,), copies=(Copy.REPAIRER,)))
    flowing = bridge.publish_in_background(traffic, RATE)
    flowing.wait_until_published(len(traffic) // 3)

    fault(bridge, flowing, subscriptions)

    flowing.join()
    expected = expected_deliveries(traffic, subscriptions)
    delivered = bridge.wait_for_deliveries(expected, timeout=120)
    bridge.stack.wait_until_idle(timeout=60)
    for subscription in subscriptions:
        # A POST may repeat only with the same webhook-id (guarantee 2, when a function died
        # between the POST and its record); nothing else may arrive.
        assert set(delivered[subscription.endpoint]) == expected[subscription.endpoint]
    assert bridge.stack.queue_depth(bridge.stack.queue_url("IngestDeadLetterQueue")) == 0
    assert bridge.stack.queue_depth(bridge.stack.queue_url("DeliveryDeadLetterQueue")) == 0
    return subscriptions


def a_delivery_failed(bridge: Bridge, subscriptions: list[Subscription]) -> bool:
    """An attempt to one of the subscriptions failed and another is scheduled."""
    return any(d["status"] == "pending" for s in subscriptions for d in bridge.deliveries(s))


def test_a_shovel_killed_mid_batch_loses_nothing(bridge: Bridge) -> None:
    def sigkill_the_shovel(bridge: Bridge, flowing: Traffic, _: list[Subscription]) -> None:
        bridge.stack.kill_shovel()
        # Events reach the broker while no shovel consumes them.
        flowing.wait_until_published(min(len(flowing.published) + 3, len(flowing.publications)))
        bridge.stack.start_shovel()

    deliver_everything_despite(bridge, sigkill_the_shovel)


def test_a_rabbitmq_restart_loses_nothing(bridge: Bridge) -> None:
    deliver_everything_despite(bridge, lambda bridge, *_: bridge.stack.restart_broker())


def test_a_receiver_down_for_a_while_gets_everything_when_back(bridge: Bridge) -> None:
    def receiver_outage(bridge: Bridge, _: Traffic, subscriptions: list[Subscription]) -> None:
        bridge.receiver.go_down()
        wait_until(lambda: a_delivery_failed(bridge, subscriptions), "an attempt that failed")
        bridge.receiver.come_back()

    subscriptions = deliver_everything_despite(bridge, receiver_outage)

    # The outage was felt: some deliveries needed more than one attempt.
    attempts = [d["attempt_count"] for s in subscriptions for d in bridge.deliveries(s)]
    assert max(attempts) > 1
    assert all(d["status"] == "succeeded" for s in subscriptions for d in bridge.deliveries(s))


def test_an_aws_outage_only_delays_events(bridge: Bridge) -> None:
    def sqs_errors() -> int:
        return sum(s.counters.sqs_errors for s in bridge.stack.event_sources.values())

    errors_before = sqs_errors()

    def aws_refuses_connections(bridge: Bridge, *_: object) -> None:
        assert bridge.stack.aws_proxy is not None
        bridge.stack.aws_proxy.refuse()
        wait_until(lambda: sqs_errors() > errors_before, "a poller that could not reach SQS")
        bridge.stack.aws_proxy.accept()

    deliver_everything_despite(bridge, aws_refuses_connections)

    # The outage was felt: the functions' pollers could not reach SQS for a while.
    assert sqs_errors() > errors_before


# What each function really calls: ingest reads the Fetcher keys (Secrets Manager), claims,
# pages and records (DynamoDB), enqueues (SQS) and signs (KMS); deliver records (DynamoDB), backs
# off and parks (SQS) and signs (KMS), and never calls Secrets Manager or Firehose. On the local
# stack the analytics rows go to the local file sink, not Firehose: its failure is the spill
# path's tests' (tests/integration/test_ingest_analytics.py).
INGEST_KINDS = (
    ("dynamodb", "ProvisionedThroughputExceededException", 400),
    ("dynamodb", "ThrottlingException", 400),
    ("sqs", "RequestThrottled", 400),
    ("sqs", "ServiceUnavailable", 503),
    ("kms", "ThrottlingException", 400),
    # botocore names the service so in its events.
    ("secrets-manager", "ServiceUnavailable", 503),
)
DELIVER_KINDS = (
    ("dynamodb", "ProvisionedThroughputExceededException", 400),
    ("dynamodb", "ThrottlingException", 400),
    ("sqs", "RequestThrottled", 400),
    ("sqs", "ServiceUnavailable", 503),
    ("kms", "ThrottlingException", 400),
)
# What every run must have injected: DynamoDB is called by every invocation of both, SQS by every
# ingest invocation. The others are injected whenever the function calls them during the fault
# (deliver's SQS calls back off a failed POST; KMS decrypts a data key once per subscription and
# warm process; the Fetcher keys are cached), which the test checks call by call.
ALWAYS_CALLED = frozenset(
    {("IngestFunction", "dynamodb"), ("IngestFunction", "sqs"), ("DeliverFunction", "dynamodb")}
)


def test_throttling_and_5xx_answers_in_ingest_and_deliver_lose_and_park_nothing(
    bridge: Bridge,
) -> None:
    faults = bridge.stack.faults
    rules = []
    calls_before: Counter[tuple[str, str]] = Counter()

    def aws_answers_throttling_and_5xx(
        bridge: Bridge, _: Traffic, subscriptions: list[Subscription]
    ) -> None:
        calls_before.update(faults.calls)
        for function, kinds in (
            ("IngestFunction", INGEST_KINDS),
            ("DeliverFunction", DELIVER_KINDS),
        ):
            for service, code, status in kinds:
                # Two attempts of a call in a row: botocore's third one gets through.
                rules.append((faults.inject(function, service, code, status, times=2), service))
        # A receiver that fails for a moment: its first attempts fail, so the deliver function
        # retries them while its own calls are answered with throttling.
        bridge.receiver.go_down()
        wait_until(lambda: a_delivery_failed(bridge, subscriptions), "an attempt that failed")
        bridge.receiver.come_back()

    try:
        deliver_everything_despite(bridge, aws_answers_throttling_and_5xx)
    finally:
        faults.clear()

    hit = {(rule.function, service, rule.code) for rule, service in rules if rule.hits}
    called = {key for key, count in faults.calls.items() if count > calls_before[key]}
    for function, kinds in (("IngestFunction", INGEST_KINDS), ("DeliverFunction", DELIVER_KINDS)):
        for service, code, _ in kinds:
            if (function, service) in ALWAYS_CALLED or (function, service) in called:
                assert (function, service, code) in hit, (function, service, code)
    # Nothing that a retry would have delivered was parked, and nothing spilled is left over.
    assert bridge.stack.queue_depth(bridge.stack.queue_url("SpillDeadLetterQueue")) == 0
