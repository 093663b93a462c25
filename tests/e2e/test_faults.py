"""Faults while traffic flows: after recovery every valid event is delivered, none is lost.

Each test publishes a steady stream of signed events (each followed by a repairer copy) for two
subscriptions of one tenant, breaks one part of the path a third of the way in, repairs it, and
then checks that every event reached every subscription that matches it, that nothing arrived
that was not sent, and that nothing is left in a queue or a dead-letter queue. The README's
guarantee 1: broker restarts, shovel crashes, receiver outages and AWS errors only delay events.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from jobhooks_tools.publisher import Copy, sample_traffic
from jobhooks_tools.sample_events import demo_key

from tests.e2e.harness import Bridge, Subscription, expected_deliveries, unique_tenant

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

EVENTS = 40
RATE = 20.0  # messages per second: 80 messages (events and copies) over 4 s


def deliver_everything_despite(
    bridge: Bridge, fault: Callable[[Bridge], None]
) -> list[Subscription]:
    key = demo_key()
    tenant = unique_tenant("faults")
    subscriptions = [
        bridge.subscribe(tenant),
        bridge.subscribe(tenant, event_types=["job.completed"]),
    ]
    traffic = list(sample_traffic(key, count=EVENTS, tenants=(tenant,), copies=(Copy.REPAIRER,)))
    flowing = bridge.publish_in_background(traffic, RATE)
    flowing.wait_until_published(len(traffic) // 3)

    fault(bridge)

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


def test_a_shovel_killed_mid_batch_loses_nothing(bridge: Bridge) -> None:
    def sigkill_the_shovel(bridge: Bridge) -> None:
        bridge.stack.kill_shovel()
        time.sleep(1)
        bridge.stack.start_shovel()

    deliver_everything_despite(bridge, sigkill_the_shovel)


def test_a_rabbitmq_restart_loses_nothing(bridge: Bridge) -> None:
    deliver_everything_despite(bridge, lambda bridge: bridge.stack.restart_broker())


def test_a_receiver_down_for_a_while_gets_everything_when_back(bridge: Bridge) -> None:
    def receiver_outage(bridge: Bridge) -> None:
        bridge.receiver.go_down()
        time.sleep(4)
        bridge.receiver.come_back()

    subscriptions = deliver_everything_despite(bridge, receiver_outage)

    # The outage was felt: some deliveries needed more than one attempt.
    attempts = [d["attempt_count"] for s in subscriptions for d in bridge.deliveries(s)]
    assert max(attempts) > 1
    assert all(d["status"] == "succeeded" for s in subscriptions for d in bridge.deliveries(s))


def test_an_aws_outage_only_delays_events(bridge: Bridge) -> None:
    def aws_refuses_connections(bridge: Bridge) -> None:
        assert bridge.stack.aws_proxy is not None
        bridge.stack.aws_proxy.refuse()
        time.sleep(4)
        bridge.stack.aws_proxy.accept()

    def sqs_errors() -> int:
        return sum(s.counters.sqs_errors for s in bridge.stack.event_sources.values())

    errors_before = sqs_errors()
    deliver_everything_despite(bridge, aws_refuses_connections)

    # The outage was felt: the functions' pollers could not reach SQS for a while.
    assert sqs_errors() > errors_before
