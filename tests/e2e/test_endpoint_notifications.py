"""Endpoint notifications, end to end: receivers that answer 410, fail, or fail and come back
make the bridge send `endpoint.disabled`, `delivery.exhausted`, `endpoint.failing` and
`endpoint.recovered` to the same tenant's subscription that lists them, signed like any webhook
(verified with the subscription's secret), once per state change; never to another tenant.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from jobhooks.webhook_signature import webhook_id_for
from jobhooks_tools.local.demo_receiver import ReceivedWebhook

from tests.e2e.harness import Bridge, Subscription, unique_tenant, wait_until
from tests.e2e.test_job_filters import job_event

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]


def notifications(bridge: Bridge, subscription: Subscription, kind: str) -> list[ReceivedWebhook]:
    """What the endpoint received of `kind`, once per webhook-id (a retried POST is one)."""
    seen: dict[str, ReceivedWebhook] = {}
    for webhook in bridge.receiver.received(subscription.endpoint):
        if json.loads(webhook.body).get("type") == kind and 200 <= webhook.answered < 300:
            seen.setdefault(webhook.webhook_id, webhook)
    return list(seen.values())


def wait_for_notification(
    bridge: Bridge, subscription: Subscription, kind: str, timeout: float = 60
) -> None:
    bridge.receiver.wait_for(
        lambda _: bool(notifications(bridge, subscription, kind)), timeout, what=kind
    )


def data_of(webhook: ReceivedWebhook) -> dict[str, Any]:
    assert webhook.verified, webhook.problem
    document = json.loads(webhook.body)
    data: dict[str, Any] = document["data"]
    return data


def test_a_410_disables_the_endpoint_and_notifies_its_tenant_once(bridge: Bridge) -> None:
    tenant, other = unique_tenant("gone"), unique_tenant("gone-other")
    notified = bridge.subscribe(tenant, event_types=["endpoint.disabled"])
    gone = bridge.subscribe(tenant)
    elsewhere = bridge.subscribe(other, event_types=["endpoint.disabled"])
    bridge.subscribe(other)  # another tenant's endpoint, healthy
    bridge.receiver.set_status(gone.endpoint, 410)

    # Several deliveries answered 410 at about the same time: one state change.
    bridge.publish([job_event(tenant, "billing-sync", "completed") for _ in range(4)])
    wait_for_notification(bridge, notified, "endpoint.disabled")
    bridge.stack.wait_until_idle(timeout=60)

    [disabled] = notifications(bridge, notified, "endpoint.disabled")
    data = data_of(disabled)
    assert (data["subscription_id"], data["reason"]) == (gone.subscription_id, "gone")
    assert bridge.api("GET", f"/v1/subscriptions/{gone.subscription_id}")["status"] == "disabled"
    assert bridge.receiver.received(elsewhere.endpoint) == []
    # Never to the endpoint it is about (which lists no notification type anyway).
    assert all(
        json.loads(w.body)["type"] == "job.completed"
        for w in bridge.receiver.received(gone.endpoint)
    )


def test_an_operator_disable_notifies_endpoint_disabled_with_reason_operator(
    bridge: Bridge,
) -> None:
    tenant = unique_tenant("operator")
    notified = bridge.subscribe(tenant, event_types=["endpoint.disabled"])
    endpoint = bridge.subscribe(tenant)

    path = f"/v1/subscriptions/{endpoint.subscription_id}"
    bridge.api("PATCH", path, {"status": "disabled"})
    bridge.api("PATCH", path, {"status": "disabled"})  # disabled already: no new state change
    wait_for_notification(bridge, notified, "endpoint.disabled")
    bridge.stack.wait_until_idle(timeout=60)

    [disabled] = notifications(bridge, notified, "endpoint.disabled")
    data = data_of(disabled)
    assert (data["subscription_id"], data["reason"]) == (endpoint.subscription_id, "operator")


def test_an_exhausted_delivery_produces_delivery_exhausted(bridge: Bridge) -> None:
    tenant = unique_tenant("exhausted")
    notified = bridge.subscribe(tenant, event_types=["delivery.exhausted"])
    failing = bridge.subscribe(tenant)
    bridge.receiver.set_status(failing.endpoint, 503)
    event = job_event(tenant, "billing-sync", "failed")

    bridge.publish([event])
    # Eight attempts over about 15 s (the test schedule), then parked.
    wait_for_notification(bridge, notified, "delivery.exhausted", timeout=90)
    bridge.stack.wait_until_idle(timeout=60)

    [exhausted] = notifications(bridge, notified, "delivery.exhausted")
    data = data_of(exhausted)
    [delivery] = bridge.deliveries(failing)
    assert delivery["status"] == "parked"
    assert (data["subscription_id"], data["event_id"], data["delivery_id"]) == (
        failing.subscription_id,
        event.event_id,
        delivery["delivery_id"],
    )
    assert data["attempts"] == delivery["attempt_count"]
    assert data["last_result"] == "http_503"

    # The bridge is shared: its delivery DLQ is left empty, as the tests after this one expect
    # (they count what they park), by fixing the receiver and redriving what this test parked.
    delivery_dlq = bridge.stack.queue_url("DeliveryDeadLetterQueue")
    bridge.receiver.set_status(failing.endpoint, 200)
    bridge.api("POST", "/v1/dlq/redrive", {})
    bridge.wait_for_deliveries({failing.endpoint: {webhook_id_for(event.event_id)}}, timeout=60)
    wait_until(lambda: bridge.stack.queue_depth(delivery_dlq) == 0, "the delivery DLQ emptied")


def test_failing_then_recovered_each_once(bridge: Bridge) -> None:
    tenant = unique_tenant("flaky")
    notified = bridge.subscribe(tenant, event_types=["endpoint.failing", "endpoint.recovered"])
    flaky = bridge.subscribe(tenant)
    bridge.receiver.set_status(flaky.endpoint, 503)
    events = [job_event(tenant, "billing-sync", "completed") for _ in range(3)]

    bridge.publish(events)
    wait_for_notification(bridge, notified, "endpoint.failing", timeout=60)
    bridge.receiver.set_status(flaky.endpoint, 200)
    bridge.wait_for_deliveries(
        {flaky.endpoint: {webhook_id_for(e.event_id) for e in events}}, timeout=60
    )
    wait_for_notification(bridge, notified, "endpoint.recovered", timeout=30)
    bridge.stack.wait_until_idle(timeout=60)

    [failing] = notifications(bridge, notified, "endpoint.failing")
    [recovered] = notifications(bridge, notified, "endpoint.recovered")
    assert failing.received_at < recovered.received_at
    failing_data, recovered_data = data_of(failing), data_of(recovered)
    assert failing_data["subscription_id"] == recovered_data["subscription_id"]
    assert failing_data["subscription_id"] == flaky.subscription_id
    assert failing_data["consecutive_failures"] >= 5  # the default threshold
    assert recovered_data["failed_attempts"] >= failing_data["consecutive_failures"]
    assert recovered_data["failing_since"] == failing_data["failing_since"]
