"""Job filters, end to end: a subscription that names `job_names` receives only those jobs.

Events of three jobs go through the whole bridge (RabbitMQ -> shovel -> SQS -> ingest ->
deliver); each receiver verifies the Standard Webhooks signature of what it got. Unmatched
events are still analytics rows.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from jobhooks.inbound.outcome import format_timestamp
from jobhooks.webhook_signature import webhook_id_for
from jobhooks_tools.local.analytics.files import row_files
from jobhooks_tools.publisher import SamplePublication
from jobhooks_tools.sample_events import completed_body, demo_key, failed_body, make_job_event

from tests.e2e.harness import Bridge, unique_tenant, wait_until

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]


def job_event(tenant: str, source: str, status: str) -> SamplePublication:
    """A signed event of job `source`, completed now (its analytics row is in today's window)."""
    job_id = str(uuid.uuid4())
    body = (
        completed_body(job_id, source=source, completed_at=format_timestamp(datetime.now(UTC)))
        if status == "completed"
        else failed_body(job_id, source=source)
    )
    event = make_job_event(demo_key(), status=status, tenant_id=tenant, job_id=job_id, body=body)
    return SamplePublication(
        event=event,
        vhost=None,
        event_id=f"fetcher.job.{status}.{job_id}",
        tenant_id=tenant,
        event_type=f"job.{status}",
        kind="original",
    )


def test_a_filtered_subscription_gets_only_its_jobs(bridge: Bridge) -> None:
    tenant = unique_tenant("filters")
    billing = bridge.subscribe(tenant, job_names=["billing-*"])
    reports = bridge.subscribe(tenant, job_names=["nightly-report", "audit"])
    everything = bridge.subscribe(tenant)
    events = {
        source: [job_event(tenant, source, status) for status in ("completed", "failed")]
        for source in ("billing-invoices", "billing-refunds", "nightly-report", "payments")
    }

    bridge.publish(p for published in events.values() for p in published)

    def ids(*sources: str) -> set[str]:
        return {webhook_id_for(p.event_id) for s in sources for p in events[s]}

    delivered = bridge.wait_for_deliveries(
        {
            billing.endpoint: ids("billing-invoices", "billing-refunds"),
            reports.endpoint: ids("nightly-report"),
            everything.endpoint: ids(*events),
        },
        timeout=90,
    )
    bridge.stack.wait_until_idle(timeout=60)
    assert set(delivered[billing.endpoint]) == ids("billing-invoices", "billing-refunds")
    assert set(delivered[reports.endpoint]) == ids("nightly-report")
    assert set(delivered[everything.endpoint]) == ids(*events)
    for subscription in (billing, reports, everything):
        for webhook in bridge.successes(subscription):
            assert webhook.verified, webhook  # the receiver checked the signature
            assert json.loads(webhook.body)["data"]["account_id"] == tenant
    # What a filter kept from a subscription is still an analytics row, once.
    published = sorted(p.event_id for published in events.values() for p in published)
    wait_until(lambda: analytics_rows(bridge, published) == published, "every event a row")


def analytics_rows(bridge: Bridge, event_ids: list[str]) -> list[str]:
    """The written analytics rows of these events, by event id (sorted, repeats kept)."""
    wanted = set(event_ids)
    return sorted(
        row["event_id"]
        for path in row_files(bridge.stack.analytics_dir)
        for row in map(json.loads, path.read_text().splitlines())
        if row["event_id"] in wanted
    )


def test_clearing_the_filter_delivers_every_job_again(bridge: Bridge) -> None:
    tenant = unique_tenant("unfilter")
    subscription = bridge.subscribe(tenant, job_names=["billing-*"])
    updated = bridge.api(
        "PATCH", f"/v1/subscriptions/{subscription.subscription_id}", {"job_names": []}
    )
    assert updated["job_names"] == []
    payments = job_event(tenant, "payments", "completed")

    bridge.publish([payments])

    bridge.wait_for_deliveries(
        {subscription.endpoint: {webhook_id_for(payments.event_id)}}, timeout=60
    )
