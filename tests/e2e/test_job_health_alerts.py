"""Job-health alerts, end to end: failures of a job, ingested through the whole bridge, make
the alerts function (invoked as its schedule would) send `job_health.degraded` to the tenant's
subscription that lists it, signed like any webhook, once; nothing reaches another tenant.
"""

from __future__ import annotations

import json

import pytest
from jobhooks.webhook_signature import webhook_id_for
from jobhooks_tools.local.demo_receiver import ReceivedWebhook

from tests.e2e.harness import Bridge, unique_tenant
from tests.e2e.test_job_filters import job_event

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]


def health_alerts(bridge: Bridge, endpoint: str) -> list[ReceivedWebhook]:
    return [
        webhook
        for webhook in bridge.receiver.received(endpoint)
        if json.loads(webhook.body).get("type", "").startswith("job_health.")
    ]


def test_failures_of_a_job_produce_job_health_degraded_once(bridge: Bridge) -> None:
    tenant, other = unique_tenant("health"), unique_tenant("health-other")
    notified = bridge.subscribe(tenant, event_types=["job_health.degraded", "job_health.recovered"])
    jobs = bridge.subscribe(tenant)
    elsewhere = bridge.subscribe(other, event_types=["job_health.degraded"])
    rule = bridge.api(
        "POST",
        "/v1/alerts",
        {"tenant_id": tenant, "job_name": "billing-*", "failure_rate": 0.5, "min_outcomes": 3},
    )
    bridge.api(
        "POST",
        "/v1/alerts",
        {"tenant_id": other, "job_name": "*", "failure_rate": 0.5, "min_outcomes": 1},
    )
    failed = [job_event(tenant, "billing-sync", "failed") for _ in range(3)]
    healthy = [job_event(tenant, "payments", "failed") for _ in range(3)]  # no rule covers it

    bridge.publish([*failed, *healthy, job_event(tenant, "billing-sync", "completed")])
    bridge.wait_for_deliveries(
        {jobs.endpoint: {webhook_id_for(p.event_id) for p in failed}}, timeout=90
    )
    bridge.stack.wait_until_idle(timeout=60)

    bridge.stack.run_scheduled("AlertsFunction")
    bridge.receiver.wait_for(
        lambda _: bool(health_alerts(bridge, notified.endpoint)), 60, what="job_health.degraded"
    )
    bridge.stack.run_scheduled("AlertsFunction")  # still degraded: nothing more
    bridge.stack.wait_until_idle(timeout=60)

    (alert,) = health_alerts(bridge, notified.endpoint)
    assert alert.verified, alert.problem  # signed with the subscription's secret
    body = json.loads(alert.body)
    assert body["type"] == "job_health.degraded"
    data = body["data"]
    assert (data["rule_id"], data["job_name"]) == (rule["rule_id"], "billing-sync")
    assert (data["outcomes"], data["failures"], data["failure_rate"]) == (4, 3, 0.75)
    assert data["thresholds"] == {"failure_rate": 0.5, "p95_ms": None, "min_outcomes": 3}
    assert data["window"]["seconds"] == 900
    assert health_alerts(bridge, jobs.endpoint) == []  # it does not list the type
    assert health_alerts(bridge, elsewhere.endpoint) == []  # another tenant, no outcome
    listed = bridge.api("GET", f"/v1/alerts?tenant_id={tenant}")
    assert [job["job_name"] for job in listed["rules"][0]["degraded"]] == ["billing-sync"]
    assert [a["type"] for a in listed["recent_alerts"]] == ["job_health.degraded"]
