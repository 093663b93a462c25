"""An endpoint disabled, events arriving meanwhile, the endpoint back and made whole, end to end.

Events go through the whole bridge (RabbitMQ -> shovel -> SQS -> ingest -> deliver) of `jobhooks
dev`; each receiver verifies the Standard Webhooks signature of what it got. While the endpoint
is disabled (by an operator, by its own 410, or for sustained failure under `jobhooks dev
--auto-disable-after 15s`) its events are recorded `skipped` and nothing is POSTed; `jobhooks
webhooks recover --since` then delivers every event of the outage exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from jobhooks.storage.times import format_time
from jobhooks.webhook_signature import webhook_id_for
from jobhooks_tools.local.demo_receiver import DemoReceiver
from jobhooks_tools.publisher import SamplePublication, SamplePublisher, sample_traffic
from jobhooks_tools.sample_events import demo_key

from tests.e2e.harness import Bridge, Subscription, unique_tenant
from tests.e2e.test_dev_command import DevCommand, dev_amqp_url
from tests.e2e.test_job_filters import job_event
from tests.e2e.test_sustained_failure import call, subscribe

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
__all__ = ["dev_amqp_url"]  # the fixture, shared with test_dev_command


def jobhooks(bridge: Bridge, *arguments: str) -> subprocess.CompletedProcess[str]:
    """The `jobhooks` CLI against the bridge's management API, as `jobhooks dev` tells users."""
    environment = {
        **os.environ,
        "JOBHOOKS_API_URL": str(bridge.stack.api_url),
        "JOBHOOKS_API_AUTH": "none",
    }
    return subprocess.run(
        [sys.executable, "-m", "jobhooks_tools.cli.main", *arguments],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not true after {timeout} s")
        time.sleep(0.5)


def statuses(bridge: Bridge, subscription: Subscription) -> dict[str, str]:
    """The status of each of the subscription's deliveries, by webhook-id."""
    return {d["webhook_id"]: d["status"] for d in bridge.deliveries(subscription)}


def valid_events(publications: list[SamplePublication]) -> list[str]:
    return [webhook_id_for(p.event_id) for p in publications if p.valid]


def set_status(bridge: Bridge, subscription: Subscription, status: str) -> None:
    changed = bridge.api(
        "PATCH", f"/v1/subscriptions/{subscription.subscription_id}", {"status": status}
    )
    assert changed["status"] == status


def recover_exactly_once(
    bridge: Bridge, subscription: Subscription, since: str, outage: list[str]
) -> dict[str, Any]:
    """`jobhooks webhooks recover`, then every event of the outage arrives once, verified."""
    recovered = jobhooks(
        bridge, "webhooks", "recover", subscription.subscription_id, "--since", since
    )
    assert recovered.returncode == 0, recovered.stderr
    assert f"recover {subscription.subscription_id}: " in recovered.stderr  # progress
    counts = json.loads(recovered.stdout)
    delivered = bridge.wait_for_deliveries({subscription.endpoint: set(outage)}, timeout=90)
    bridge.stack.wait_until_idle(timeout=60)
    successes = bridge.successes(subscription)
    assert all(webhook.verified for webhook in successes)
    once = {webhook_id: n for webhook_id, n in delivered[subscription.endpoint].items()}
    assert {webhook_id: once.get(webhook_id) for webhook_id in outage} == dict.fromkeys(outage, 1)
    assert [w.webhook_id for w in successes].count(outage[0]) == 1
    wait_until(
        lambda: set(statuses(bridge, subscription).values()) == {"succeeded"},
        timeout=30,
        what="every recovered delivery recorded succeeded",
    )
    return counts  # type: ignore[no-any-return]


def test_an_operator_disabled_endpoint_gets_every_event_of_the_outage_once_after_recover(
    bridge: Bridge,
) -> None:
    tenant = unique_tenant("outage")
    subscription = bridge.subscribe(tenant)
    since = format_time(datetime.now(UTC) - timedelta(seconds=1))
    set_status(bridge, subscription, "disabled")

    traffic = bridge.publish(sample_traffic(demo_key(), count=6, tenants=(tenant,)))
    outage = valid_events(traffic)
    wait_until(
        lambda: statuses(bridge, subscription) == dict.fromkeys(outage, "skipped"),
        timeout=60,
        what="every event of the outage recorded skipped",
    )
    bridge.stack.wait_until_idle(timeout=60)
    assert bridge.receiver.received(subscription.endpoint) == []  # nothing POSTed
    refused = jobhooks(
        bridge, "webhooks", "recover", subscription.subscription_id, "--since", since
    )
    assert refused.returncode == 1
    assert refused.stderr.startswith("jobhooks: subscription_not_active: ")

    set_status(bridge, subscription, "active")
    counts = recover_exactly_once(bridge, subscription, since, outage)

    assert (counts["sent"], counts["by_status"]) == (len(outage), {"skipped": len(outage)})
    again = jobhooks(bridge, "webhooks", "recover", subscription.subscription_id, "--since", since)
    assert json.loads(again.stdout)["sent"] == 0  # safe to run twice
    bridge.stack.wait_until_idle(timeout=30)
    assert len(bridge.successes(subscription)) == len(outage)


def test_an_endpoint_disabled_by_its_410_gets_the_outage_once_after_recover(
    bridge: Bridge,
) -> None:
    tenant = unique_tenant("gone")
    subscription = bridge.subscribe(tenant)
    bridge.receiver.set_status(subscription.endpoint, 410)
    since = format_time(datetime.now(UTC) - timedelta(seconds=1))
    [first] = bridge.publish(sample_traffic(demo_key(), count=1, tenants=(tenant,)))
    path = f"/v1/subscriptions/{subscription.subscription_id}"
    wait_until(
        lambda: bridge.api("GET", path)["status"] == "disabled",
        timeout=60,
        what="the 410 disabled the subscription",
    )

    later = bridge.publish(sample_traffic(demo_key(), count=4, tenants=(tenant,)))
    skipped = valid_events(later)
    wait_until(
        lambda: (
            statuses(bridge, subscription)
            == {webhook_id_for(first.event_id): "gone", **dict.fromkeys(skipped, "skipped")}
        ),
        timeout=60,
        what="the 410's delivery gone, the later ones skipped",
    )
    bridge.stack.wait_until_idle(timeout=60)
    assert len(bridge.receiver.received(subscription.endpoint)) == 1  # only the 410'd POST

    bridge.receiver.set_status(subscription.endpoint, 200)
    set_status(bridge, subscription, "active")
    counts = recover_exactly_once(
        bridge, subscription, since, [webhook_id_for(first.event_id), *skipped]
    )

    assert counts["by_status"] == {"gone": 1, "skipped": len(skipped)}


def test_a_bad_since_is_refused_by_the_cli_and_by_the_api_with_its_reason(
    bridge: Bridge,
) -> None:
    subscription = bridge.subscribe(unique_tenant("since"))

    cli = jobhooks(bridge, "webhooks", "recover", subscription.subscription_id, "--since", "noon")
    assert cli.returncode == 2
    assert "argument --since: 'noon' is not an ISO 8601 time" in cli.stderr
    request = urllib.request.Request(
        f"{bridge.stack.api_url}/v1/subscriptions/{subscription.subscription_id}/recover",
        method="POST",
        data=json.dumps({"since": "2026-12-06 01:00"}).encode(),
        headers={"content-type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 422
    error = json.loads(refused.value.read())["error"]
    assert (error["code"], error["field"]) == ("invalid_since", "since")


def test_an_endpoint_disabled_for_sustained_failure_re_enabled_and_recovered_receives_the_outage(
    dev_amqp_url: str, tmp_path: Path
) -> None:
    # 12 attempts 2 s apart: every attempt of the outage fails for more than 15 s.
    dev = DevCommand(
        "--amqp-url",
        dev_amqp_url,
        "--data-dir",
        str(tmp_path),
        "--retry-schedule",
        "0," + ",".join(["2"] * 11),
        "--auto-disable-after",
        "15s",
    )
    receiver = DemoReceiver().start()
    try:
        api = dev.wait_for(r"export JOBHOOKS_API_URL=(\S+) JOBHOOKS_API_AUTH=none").group(1)
        dev.wait_for(r"waiting for events")
        tenant = unique_tenant("sustained")
        subscription_id, endpoint = subscribe(
            api, receiver, tenant, ["job.completed", "job.failed"]
        )
        receiver.set_status(endpoint, 503)
        since = format_time(datetime.now(UTC) - timedelta(seconds=1))
        with SamplePublisher(dev_amqp_url) as publisher:
            before = [job_event(tenant, "billing-sync", "completed") for _ in range(2)]
            for publication in before:
                publisher.publish_sample(publication, retry_for=30)
            path = f"/v1/subscriptions/{subscription_id}"
            wait_until(
                lambda: call(api, "GET", path)["status"] == "disabled",
                timeout=90,
                what="the endpoint disabled for sustained failure",
            )
            assert call(api, "GET", path)["disabled_reason"].startswith("every attempt failed")
            during = [job_event(tenant, "billing-sync", "completed") for _ in range(2)]
            for publication in during:
                publisher.publish_sample(publication, retry_for=30)
        outage = [webhook_id_for(p.event_id) for p in [*before, *during]]

        def settled() -> bool:
            listed = call(api, "GET", f"/v1/deliveries?subscription_id={subscription_id}")
            found = {d["webhook_id"]: d["status"] for d in listed["deliveries"]}
            return set(found) == set(outage) and "pending" not in found.values()

        wait_until(settled, timeout=60, what="every delivery of the outage settled")
        assert not [w for w in receiver.received(endpoint) if 200 <= w.answered < 300]

        receiver.set_status(endpoint, 200)
        assert call(api, "PATCH", path, {"status": "active"})["status"] == "active"
        cli = [sys.executable, "-m", "jobhooks_tools.cli.main", "webhooks", "recover"]
        recovered = subprocess.run(
            [*cli, subscription_id, "--since", since],
            env={**os.environ, "JOBHOOKS_API_URL": api, "JOBHOOKS_API_AUTH": "none"},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert recovered.returncode == 0, recovered.stderr
        assert json.loads(recovered.stdout)["sent"] == len(outage)

        def successes() -> list[str]:
            return [w.webhook_id for w in receiver.received(endpoint) if 200 <= w.answered < 300]

        wait_until(lambda: set(successes()) == set(outage), timeout=90, what="the outage recovered")
        wait_until(settled_succeeded(api, subscription_id, outage), 60, "recorded succeeded")
        verified = [w.verified for w in receiver.received(endpoint) if 200 <= w.answered < 300]
    finally:
        receiver.stop()
        code = dev.stop(signal.SIGINT)

    assert code == 0, "\n".join(dev.lines)
    assert sorted(successes()) == sorted(outage)  # each event of the outage exactly once
    assert all(verified)


def settled_succeeded(api: str, subscription_id: str, outage: list[str]) -> Callable[[], bool]:
    def check() -> bool:
        listed = call(api, "GET", f"/v1/deliveries?subscription_id={subscription_id}")
        found = {d["webhook_id"]: d["status"] for d in listed["deliveries"]}
        return found == dict.fromkeys(outage, "succeeded")

    return check
