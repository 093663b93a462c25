"""A receiver that always fails: its deliveries are parked in the delivery DLQ after the last
attempt, and `jobhooks dlq redrive`, once the receiver is fixed, delivers them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from jobhooks_tools.publisher import sample_traffic
from jobhooks_tools.sample_events import demo_key

from tests.e2e.conftest import RETRY_SCHEDULE
from tests.e2e.harness import Bridge, Subscription, expected_deliveries, unique_tenant

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

ATTEMPTS = len(RETRY_SCHEDULE.split(","))


def test_a_failing_receiver_ends_in_the_dlq_and_redrive_delivers_after_the_fix(
    bridge: Bridge,
) -> None:
    tenant = unique_tenant("initrode")
    subscription = bridge.subscribe(tenant)
    bridge.receiver.set_status(subscription.endpoint, 503)
    traffic = bridge.publish(sample_traffic(demo_key(), count=3, tenants=(tenant,)))
    delivery_dlq = bridge.stack.queue_url("DeliveryDeadLetterQueue")

    # Eight attempts about 15 s apart in all (the test schedule), then parked.
    wait_until(lambda: _statuses(bridge, subscription) == ["parked"] * 3, timeout=90)
    assert bridge.stack.queue_depth(delivery_dlq) == 3
    assert [d["attempt_count"] for d in bridge.deliveries(subscription)] == [ATTEMPTS] * 3
    assert not bridge.successes(subscription)
    assert len(bridge.receiver.received(subscription.endpoint)) == 3 * ATTEMPTS
    listing = json.loads(jobhooks(bridge, "dlq", "list", "--output", "json", "--limit", "100"))
    ours = [m for m in listing["messages"] if m["subscription_id"] == subscription.subscription_id]
    assert [m["park_reason"] for m in ours] == ["attempts_exhausted"] * 3

    bridge.receiver.set_status(subscription.endpoint, 200)
    redriven = json.loads(jobhooks(bridge, "dlq", "redrive"))
    assert (redriven["method"], redriven["remaining"]) == ("resend", 0)

    delivered = bridge.wait_for_deliveries(expected_deliveries(traffic, [subscription]), timeout=60)
    assert all(count == 1 for count in delivered[subscription.endpoint].values())
    wait_until(lambda: _statuses(bridge, subscription) == ["succeeded"] * 3, timeout=30)
    assert bridge.stack.queue_depth(delivery_dlq) == 0


def jobhooks(bridge: Bridge, *arguments: str) -> str:
    """Run the `jobhooks` CLI against the bridge's management API; its standard output."""
    environment = {
        **os.environ,
        "JOBHOOKS_API_URL": str(bridge.stack.api_url),
        "JOBHOOKS_API_AUTH": "none",
    }
    completed = subprocess.run(
        [sys.executable, "-m", "jobhooks_tools.cli.main", *arguments],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def _statuses(bridge: Bridge, subscription: Subscription) -> list[str]:
    return sorted(d["status"] for d in bridge.deliveries(subscription))


def wait_until(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout} s")
        time.sleep(0.5)
