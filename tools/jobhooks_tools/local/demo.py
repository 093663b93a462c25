"""`jobhooks dev --demo`: a receiver, a webhook for it, and a few sample events to watch.

A newcomer sees the whole path in under a minute: a signed completed event and a failed one are
delivered and verified; a repairer re-emission of the completed one is deduplicated; a copy
re-addressed to another tenant is quarantined as `signature_mismatch` and reaches no one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from jobhooks.inbound.keys import HmacKey

from jobhooks_tools.local.activity import Activity
from jobhooks_tools.local.demo_receiver import DemoReceiver, ReceivedWebhook
from jobhooks_tools.publisher import (
    Copy,
    SamplePublication,
    SamplePublisher,
    Tampering,
    sample_traffic,
    tamper,
)

DEMO_TENANT: Final = "acme"
DEMO_ENDPOINT: Final = "demo"


@dataclass(frozen=True)
class DemoWebhook:
    subscription_id: str
    url: str
    tenant_id: str


def start_demo_receiver(on_activity: Callable[[Activity], None]) -> DemoReceiver:
    def report(webhook: ReceivedWebhook) -> None:
        on_activity(received_activity(webhook))

    return DemoReceiver(on_webhook=report).start()


def register_demo_webhook(receiver: DemoReceiver, tenant_id: str = DEMO_TENANT) -> DemoWebhook:
    """A subscription of `tenant_id` to every event type, pointing at the demo receiver; made
    through the same management logic as `jobhooks webhooks add`."""
    from jobhooks.management.context import build_management_context
    from jobhooks.management.models import CreateSubscriptionRequest
    from jobhooks.management.settings import ManagementSettings
    from jobhooks.management.subscriptions import create_subscription

    context = build_management_context(ManagementSettings.from_env())
    url = receiver.add_endpoint(DEMO_ENDPOINT)
    created = create_subscription(
        context,
        CreateSubscriptionRequest(
            tenant_id=tenant_id, url=url, description="jobhooks dev --demo receiver"
        ),
    )
    receiver.trust(DEMO_ENDPOINT, created.secret)
    return DemoWebhook(created.subscription_id, url, tenant_id)


def demo_portal_link(api_url: str, tenant_id: str = DEMO_TENANT) -> dict[str, str]:
    """A one-time portal link for `tenant_id`, asked of the local API as `jobhooks portal link`
    asks a deployed one (`{"url", "expires_at", ...}`)."""
    import json
    import urllib.request

    request = urllib.request.Request(  # noqa: S310 - the local API's own http URL
        f"{api_url}/v1/portal/links",
        data=json.dumps({"tenant_id": tenant_id}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=15) as answer:  # noqa: S310
        document: dict[str, str] = json.loads(answer.read())
    return document


def demo_traffic(key: HmacKey, tenant_id: str = DEMO_TENANT) -> list[SamplePublication]:
    """Completed, failed, a repairer re-emission of the completed one, a tenant forgery."""
    completed, repairer_copy, failed = (
        *sample_traffic(
            key, count=1, tenants=(tenant_id,), statuses=("completed",), copies=(Copy.REPAIRER,)
        ),
        *sample_traffic(key, count=1, tenants=(tenant_id,), statuses=("failed",)),
    )
    return [completed, failed, repairer_copy, tamper(completed, Tampering.TENANT, key)]


def publish_demo_traffic(
    amqp_url: str, key: HmacKey, say: Callable[[str], None], tenant_id: str = DEMO_TENANT
) -> list[SamplePublication]:
    publications = demo_traffic(key, tenant_id)
    with SamplePublisher(amqp_url) as publisher:
        for publication in publications:
            publisher.publish_sample(publication)
            verdict = (
                "valid"
                if publication.valid
                else f"must be quarantined as {publication.expected_rejection}"
            )
            say(
                f"published {publication.event_type} {publication.kind} for tenant "
                f"{publication.tenant_id} ({verdict})"
            )
            # Spaced out so each step's lines are easy to follow.
            time.sleep(0.3)
    return publications


def received_activity(webhook: ReceivedWebhook) -> Activity:
    if not webhook.verified:
        return Activity(
            "receiver",
            "refused",
            f"{webhook.webhook_id}: {webhook.problem} (answered {webhook.answered})",
            {"webhook_id": webhook.webhook_id},
            webhook.received_at,
        )
    try:
        document = webhook.document
        data = document.get("data", {})
        text = (
            f"{document.get('type')} {webhook.webhook_id} account={data.get('account_id')} "
            f"job={str(data.get('job_id', ''))[:8]} status={data.get('status')} "
            f"signature ok (answered {webhook.answered})"
        )
    except (ValueError, AttributeError):
        text = f"{webhook.webhook_id}: body is not the outcome JSON (answered {webhook.answered})"
    return Activity(
        "receiver", "verified", text, {"webhook_id": webhook.webhook_id}, webhook.received_at
    )
