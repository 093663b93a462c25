"""Mixed traffic, end to end: RabbitMQ -> shovel -> SQS -> ingest -> deliver -> receivers.

Several tenants, both event types, every way the producer sends an event again (outbox relay,
repairer, broker redelivery), and every kind of tampering. What must come out: each valid event
exactly once at each subscription that matches it, with a body that follows outcome schema v1
and a signature that verifies; every tampered or unsigned message in quarantine with its reason
code; nothing at any other tenant's endpoint.
"""

from __future__ import annotations

import json
from collections import Counter

import jsonschema
import pytest
from jobhooks.inbound.envelope import ForwardedMessage
from jobhooks.webhook_signature import webhook_id_for
from jobhooks_tools.publisher import Copy, Tampering, sample_traffic
from jobhooks_tools.sample_events import demo_key

from tests.e2e.harness import SCHEMA_PATH, Bridge, expected_deliveries, unique_tenant

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

# The tenant a tampered copy is re-addressed to (jobhooks_tools.publisher's forgery).
FORGED_TENANT = "mallory"


def test_each_valid_event_reaches_each_matching_subscription_once_and_nothing_else(
    bridge: Bridge,
) -> None:
    key = demo_key()
    acme, globex, initech = (unique_tenant(name) for name in ("acme", "globex", "initech"))
    subscriptions = [
        bridge.subscribe(acme),
        bridge.subscribe(acme, event_types=["job.completed"]),
        bridge.subscribe(globex, event_types=["job.failed"]),
        # Would receive whatever a forged tenant header managed to route.
        bridge.subscribe(FORGED_TENANT),
        # initech has no subscription: its events are ingested and match nothing.
    ]
    traffic = list(
        sample_traffic(
            key,
            count=18,
            tenants=(acme, globex, initech),
            copies=tuple(Copy),
            tampered=(*Tampering, *Tampering),
        )
    )

    bridge.publish(traffic)

    expected = expected_deliveries(traffic, subscriptions)
    delivered = bridge.wait_for_deliveries(expected, timeout=90)
    bridge.stack.wait_until_idle(timeout=60)
    for subscription in subscriptions:
        counts = delivered[subscription.endpoint]
        assert set(counts) == expected[subscription.endpoint], subscription
        assert counts == Counter(dict.fromkeys(expected[subscription.endpoint], 1)), (
            f"{subscription.endpoint} got a webhook-id more than once: {counts}"
        )
    assert not delivered[subscriptions[3].endpoint], "a forged tenant reached a receiver"
    # 18 events: 6 per tenant, 3 completed and 3 failed.
    assert [len(expected[s.endpoint]) for s in subscriptions] == [6, 3, 3, 0]


def test_every_delivered_body_is_a_signed_outcome_of_its_event(bridge: Bridge) -> None:
    key = demo_key()
    tenant = unique_tenant("hooli")
    subscription = bridge.subscribe(tenant)
    traffic = list(sample_traffic(key, count=4, tenants=(tenant,), copies=(Copy.REPAIRER,)))
    schema = json.loads(SCHEMA_PATH.read_text())

    bridge.publish(traffic)
    bridge.wait_for_deliveries(expected_deliveries(traffic, [subscription]), timeout=60)

    events = {webhook_id_for(p.event_id): p for p in traffic if p.kind == "original"}
    for webhook in bridge.successes(subscription):
        assert webhook.verified, webhook.problem
        body = webhook.document
        jsonschema.validate(body, schema)
        publication = events[webhook.webhook_id]
        assert body["type"] == publication.event_type
        assert body["data"]["event_id"] == publication.event_id
        assert body["data"]["account_id"] == tenant
        assert body["data"]["status"] == (
            "success" if publication.event_type == "job.completed" else "failure"
        )


def test_every_tampered_or_unsigned_message_is_quarantined_with_its_reason(
    bridge: Bridge,
) -> None:
    key = demo_key()
    tenant = unique_tenant("umbrella")
    subscription = bridge.subscribe(tenant)
    traffic = list(sample_traffic(key, count=2, tenants=(tenant,), tampered=tuple(Tampering)))
    tampered = {str(p.event.headers["X-Request-Id"]): p for p in traffic if not p.valid}

    bridge.publish(traffic)
    bridge.wait_for_deliveries(expected_deliveries(traffic, [subscription]), timeout=60)
    bridge.stack.wait_until_idle(timeout=60)

    found: dict[str, str] = {}
    for record in bridge.quarantined():
        message = ForwardedMessage.from_json(record["message"])
        request_id = message.headers.get("X-Request-Id")
        if isinstance(request_id, str) and request_id in tampered:
            found[request_id] = record["reason"]
    assert found == {request_id: str(p.expected_rejection) for request_id, p in tampered.items()}
    # The tampered copies never reached the tenant's own endpoint either.
    assert len(bridge.successes(subscription)) == 2
