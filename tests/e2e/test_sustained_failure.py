"""Sustained failure, end to end through `jobhooks dev --auto-disable-after 15s`: an endpoint
whose every attempt fails for 15 s is disabled with reason `sustained_failure`, and its tenant's
notification endpoint receives `endpoint.disabled` once, signed; the console shows it.

The command runs as a user runs it (a child process, its own vhost on the e2e broker, stopped
with Ctrl-C), with a receiver in this process.
"""

from __future__ import annotations

import json
import re
import signal
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from jobhooks_tools.local.demo_receiver import DemoReceiver, ReceivedWebhook
from jobhooks_tools.publisher import SamplePublisher

from tests.e2e.test_dev_command import DevCommand, dev_amqp_url
from tests.e2e.test_job_filters import job_event

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
__all__ = ["dev_amqp_url"]  # the fixture, shared with test_dev_command

# 12 attempts 2 s apart: every attempt of the outage fails for more than 15 s.
RETRY_SCHEDULE = "0," + ",".join(["2"] * 11)


def call(api: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        api + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read() or b"null")


def subscribe(
    api: str, receiver: DemoReceiver, tenant: str, event_types: list[str]
) -> tuple[str, str]:
    """A subscription on an endpoint of its own; (subscription id, endpoint name)."""
    endpoint = f"{tenant}-{uuid.uuid4().hex[:6]}"
    url = receiver.add_endpoint(endpoint)
    created = call(
        api,
        "POST",
        "/v1/subscriptions",
        {"tenant_id": tenant, "url": url, "event_types": event_types},
    )
    receiver.trust(endpoint, created["secret"])
    return created["subscription_id"], endpoint


def disabled_notifications(receiver: DemoReceiver, endpoint: str) -> list[ReceivedWebhook]:
    seen: dict[str, ReceivedWebhook] = {}
    for webhook in receiver.received(endpoint):
        if json.loads(webhook.body).get("type") == "endpoint.disabled":
            seen.setdefault(webhook.webhook_id, webhook)
    return list(seen.values())


def test_every_attempt_failing_for_the_period_disables_and_notifies_once(
    dev_amqp_url: str, tmp_path: Path
) -> None:
    dev = DevCommand(
        "--amqp-url",
        dev_amqp_url,
        "--data-dir",
        str(tmp_path),
        "--retry-schedule",
        RETRY_SCHEDULE,
        "--auto-disable-after",
        "15s",
    )
    receiver = DemoReceiver().start()
    try:
        api = dev.wait_for(r"export JOBHOOKS_API_URL=(\S+) JOBHOOKS_API_AUTH=none").group(1)
        dev.wait_for(r"auto-disable\s+an endpoint failing every attempt for 15s")
        dev.wait_for(r"waiting for events")
        tenant = f"sustained-{uuid.uuid4().hex[:6]}"
        _, notified = subscribe(api, receiver, tenant, ["endpoint.disabled"])
        broken_id, broken = subscribe(api, receiver, tenant, ["job.completed", "job.failed"])
        receiver.set_status(broken, 503)
        started = time.monotonic()

        with SamplePublisher(dev_amqp_url) as publisher:
            for _ in range(2):
                publisher.publish_sample(job_event(tenant, "billing-sync", "failed"), retry_for=30)
        receiver.wait_for(
            lambda r: bool(disabled_notifications(r, notified)), 90, what="endpoint.disabled"
        )
        elapsed = time.monotonic() - started
        dev.wait_for(rf"notify\s+endpoint\.disabled\s+{tenant}: 1 delivery \(about {broken_id}\)")
        # Both deliveries' retries end (parked) once it is disabled: no more state changes.
        deadline = time.monotonic() + 60
        while any(
            d["status"] == "pending"
            for d in call(api, "GET", f"/v1/deliveries?subscription_id={broken_id}")["deliveries"]
        ):
            assert time.monotonic() < deadline, "deliveries still pending"
            time.sleep(0.5)
        subscription = call(api, "GET", f"/v1/subscriptions/{broken_id}")
    finally:
        receiver.stop()
        code = dev.stop(signal.SIGINT)

    assert code == 0, "\n".join(dev.lines)
    assert elapsed >= 15
    [disabled] = disabled_notifications(receiver, notified)
    assert disabled.verified, disabled.problem
    data = json.loads(disabled.body)["data"]
    assert (data["subscription_id"], data["reason"]) == (broken_id, "sustained_failure")
    assert data["detail"].startswith("every attempt failed from ")
    assert subscription["status"] == "disabled"
    assert subscription["disabled_reason"] == data["detail"]
    # Every POST the broken endpoint got failed (503): nothing succeeded during the outage.
    assert {w.answered for w in receiver.received(broken)} == {503}
    # The operators' view: one `notify` line (what the SNS topic receives).
    notify_lines = [line for line in dev.lines if re.search(r"\bnotify\s+endpoint\.disabled", line)]
    assert len(notify_lines) == 1, notify_lines
