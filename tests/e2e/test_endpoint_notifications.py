"""Endpoint notifications, end to end: receivers that answer 410, fail, or fail and come back
make the bridge send `endpoint.disabled`, `delivery.exhausted`, `endpoint.failing` and
`endpoint.recovered` to the same tenant's subscription that lists them, signed like any webhook
(verified with the subscription's secret), once per state change; never to another tenant.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from jobhooks.webhook_signature import webhook_id_for
from jobhooks_tools.local.demo_receiver import ReceivedWebhook

from tests.e2e.harness import Bridge, Subscription, unique_tenant, wait_until
from tests.e2e.test_job_filters import job_event
from tests.e2e.test_recover import jobhooks

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
    assert_found_like_any_delivery(bridge, notified, disabled, other)


def assert_found_like_any_delivery(
    bridge: Bridge, notified: Subscription, webhook: ReceivedWebhook, other_tenant: str
) -> None:
    """A notification's delivery is listed, shown with its attempts (API and CLI), and bound
    to its tenant, like a job webhook's."""
    [listed] = [d for d in bridge.deliveries(notified) if d["webhook_id"] == webhook.webhook_id]
    assert (listed["event_type"], listed["status"]) == ("endpoint.disabled", "succeeded")
    path = f"/v1/deliveries/{listed['delivery_id']}"
    shown = bridge.api("GET", f"{path}?tenant_id={notified.tenant_id}")
    assert (shown["tenant_id"], shown["subscription_id"]) == (
        notified.tenant_id,
        notified.subscription_id,
    )
    assert shown["event_id"].startswith("jobhooks.endpoint.disabled.")
    assert [a["status_code"] for a in shown["attempts"]][-1] == 200
    with pytest.raises(AssertionError, match="answered 404"):
        bridge.api("GET", f"{path}?tenant_id={other_tenant}")
    by_event = bridge.api(
        "GET", f"/v1/deliveries?event_id={shown['event_id']}&tenant_id={notified.tenant_id}"
    )
    assert [d["delivery_id"] for d in by_event["deliveries"]] == [listed["delivery_id"]]
    # Its body is not kept beyond the delivery queue: no replay, and it says why.
    with pytest.raises(AssertionError, match=r"answered 409.*event_payload_unavailable"):
        bridge.api("POST", f"{path}/replay")
    cli = jobhooks(
        bridge, "deliveries", "show", listed["delivery_id"], "--tenant", notified.tenant_id
    )
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["attempts"] == shown["attempts"]


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


def test_an_endpoint_disabled_whose_notification_could_not_be_enqueued_notifies_later_once(
    bridge: Bridge,
) -> None:
    """Nothing is lost: while the delivery queue refuses every SendMessageBatch of the functions,
    the 410 disables the endpoint and its `endpoint.disabled` is kept on the endpoint's item;
    the next event for the (now skipped) endpoint sends it, once, after the queue is back."""
    tenant = unique_tenant("owed")
    notified = bridge.subscribe(tenant, event_types=["endpoint.disabled"])
    gone = bridge.subscribe(tenant)
    bridge.receiver.set_status(gone.endpoint, 410)
    faults = bridge.stack.faults
    rules = [
        faults.inject(
            function, "sqs", "ServiceUnavailable", 503, times=10**6, operation="SendMessageBatch"
        )
        for function in ("IngestFunction", "DeliverFunction")
    ]
    try:
        bridge.publish([job_event(tenant, "billing-sync", "completed")])
        wait_until(lambda: bool(owed_attributes(bridge, gone)), "endpoint.disabled kept as owed")
        assert sum(rule.hits for rule in rules) > 0
    finally:
        for rule in rules:
            rule.times = rule.hits  # spent: the queue accepts again
    assert bridge.api("GET", f"/v1/subscriptions/{gone.subscription_id}")["status"] == "disabled"
    assert notifications(bridge, notified, "endpoint.disabled") == []

    # The next event's delivery to the disabled endpoint is skipped, and reads what it owes.
    bridge.publish([job_event(tenant, "billing-sync", "completed") for _ in range(2)])
    wait_for_notification(bridge, notified, "endpoint.disabled")
    wait_until(lambda: not owed_attributes(bridge, gone), "the owed notification removed")
    bridge.publish([job_event(tenant, "billing-sync", "completed")])
    bridge.stack.wait_until_idle(timeout=60)

    [disabled] = notifications(bridge, notified, "endpoint.disabled")
    data = data_of(disabled)
    assert (data["subscription_id"], data["reason"]) == (gone.subscription_id, "gone")
    statuses = sorted(d["status"] for d in bridge.deliveries(gone))
    assert statuses == ["gone", "skipped", "skipped", "skipped"]


def owed_attributes(bridge: Bridge, subscription: Subscription) -> list[str]:
    """The notifications the subscription's item keeps as owed (`health_owed_*`)."""
    dynamodb = boto3.client("dynamodb", endpoint_url=bridge.stack.aws_endpoint_url)
    assert bridge.stack.resources is not None
    item = dynamodb.get_item(
        TableName=bridge.stack.resources.table_name("SubscriptionsTable"),
        Key={"subscription_id": {"S": subscription.subscription_id}},
        ConsistentRead=True,
    )["Item"]
    return [name for name in item if name.startswith("health_owed_")]
