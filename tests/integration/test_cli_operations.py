"""`jobhooks deliveries`, `quarantine` and `dlq` against the local API server, with the real
ingest and deliver functions moving events through moto's server (`stack`)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from jobhooks_tools.local.api_server import ApiServer, load_api_module
from jobhooks_tools.local.template import LocalResources
from jobhooks_tools.sample_events import demo_key, make_job_event
from standardwebhooks.webhooks import Webhook

from tests.integration.api_support import Bridge, Receiver, local_api, run_cli
from tests.integration.history_support import Deliveries

# Imported while collecting: its logger then writes to pytest's capture, not to a test's capsys.
load_api_module()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.stop()


@pytest.fixture
def bridge(stack: LocalResources, monkeypatch: pytest.MonkeyPatch) -> Bridge:
    monkeypatch.setenv("JOBHOOKS_ALLOW_PRIVATE_WEBHOOKS", "true")
    monkeypatch.setenv("JOBHOOKS_RETRY_SCHEDULE", "0")
    monkeypatch.setenv("JOBHOOKS_DELIVERY_TIMEOUT_SECONDS", "5")
    monkeypatch.setenv("COLUMNS", "80")
    return Bridge.start(stack)


@pytest.fixture
def api(bridge: Bridge, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiServer]:
    with local_api(monkeypatch, allow_private_webhooks=True) as server:
        yield server


def test_operators_follow_a_delivery_from_parked_to_delivered(
    api: ApiServer, bridge: Bridge, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    receiver.statuses = [503]
    added = run_cli(capsys, "webhooks", "add", "--tenant", "acme", "--url", receiver.url)
    subscription_id, secret = added.json()["subscription_id"], added.json()["secret"]
    bridge.publish(make_job_event(demo_key(), tenant_id="acme").forwarded().to_json())
    bridge.publish(make_job_event(demo_key(), tenant_id="nobody").forwarded().to_json())
    bridge.ingest()
    bridge.deliver()

    listed = run_cli(capsys, "deliveries", "list", "--subscription", subscription_id)
    assert listed.code == 0, listed.stderr
    header, row = listed.stdout.splitlines()
    assert header.split() == ["DELIVERY", "STATUS", "TRIES", "LAST", "UPDATED"]
    assert row.split()[1:4] == ["parked", "1", "http_503"]
    assert all(len(line) <= 80 for line in listed.stdout.splitlines())
    delivery_id = row.split()[0]
    shown = run_cli(capsys, "deliveries", "show", delivery_id).json()
    assert [attempt["status_code"] for attempt in shown["attempts"]] == [503]
    by_event = run_cli(
        capsys, "deliveries", "list", "--event", shown["event_id"], "--output", "json"
    )
    assert by_event.json()["deliveries"][0]["delivery_id"] == delivery_id
    unmatched = run_cli(capsys, "deliveries", "list", "--unmatched", "--tenant", "nobody")
    assert "job.completed" in unmatched.stdout
    assert run_cli(capsys, "deliveries", "list", "--unmatched").code == 2

    parked = run_cli(capsys, "dlq", "list")
    assert parked.code == 0, parked.stderr
    lines = parked.stdout.splitlines()
    assert lines[0] == "delivery dead-letter queue: 1 waiting, 0 in flight"
    assert lines[1].split() == ["DELIVERY", "REASON", "LAST", "SENT"]
    assert lines[2].split()[:3] == [delivery_id, "attempts_exhausted", "http_503"]
    assert all(len(line) <= 80 for line in lines)

    redriven = run_cli(capsys, "dlq", "redrive")
    assert redriven.json()["moved"] == 1
    bridge.deliver()
    assert run_cli(capsys, "deliveries", "show", delivery_id).json()["status"] == "succeeded"
    replayed = run_cli(capsys, "deliveries", "replay", delivery_id)
    assert replayed.json()["delivery_id"] == delivery_id
    event_replay = run_cli(capsys, "deliveries", "replay", "--event", shown["event_id"])
    assert [d["subscription_id"] for d in event_replay.json()["deliveries"]] == [subscription_id]
    bridge.deliver()
    assert len(receiver.requests) == 4
    for webhook in receiver.requests:
        Webhook(secret).verify(webhook.body, webhook.headers)
    missing = run_cli(capsys, "deliveries", "show", "dlv_" + "0" * 32)
    assert missing.code == 1
    assert missing.stderr.startswith("jobhooks: delivery_not_found: ")


def test_operators_read_first_attempt_successes_beside_the_attempt_log(
    stack: LocalResources, api: ApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # Ingest made the first attempts: one succeeded (a page entry), one failed (a record).
    added = run_cli(capsys, "webhooks", "add", "--tenant", "acme", "--url", "https://x.example")
    subscription_id = added.json()["subscription_id"]
    deliveries = Deliveries(stack)
    [succeeded] = deliveries.claim_batch(1, [subscription_id])
    deliveries.succeed([succeeded], subscription_id)
    deliveries.clock.advance(seconds=1)
    [failed] = deliveries.claim_batch(1, [subscription_id])
    deliveries.attempt(failed, subscription_id, 503)
    newest_first = [failed.delivery_id(subscription_id), succeeded.delivery_id(subscription_id)]

    listed = run_cli(
        capsys, "deliveries", "list", "--subscription", subscription_id, "--output", "json"
    )
    assert listed.code == 0, listed.stderr
    assert [d["delivery_id"] for d in listed.json()["deliveries"]] == newest_first
    assert [d["status"] for d in listed.json()["deliveries"]] == ["pending", "succeeded"]
    first = run_cli(capsys, "deliveries", "list", "--subscription", subscription_id, "--limit", "1")
    cursor = first.stderr.strip().removeprefix("more: --cursor ")
    rest = run_cli(
        capsys,
        "deliveries",
        "list",
        "--subscription",
        subscription_id,
        "--cursor",
        cursor,
        "--output",
        "json",
    )
    assert [d["delivery_id"] for d in rest.json()["deliveries"]] == newest_first[1:]
    assert rest.json()["next_cursor"] is None

    shown = run_cli(capsys, "deliveries", "show", newest_first[1])
    assert shown.code == 0, shown.stderr
    assert shown.json()["status"] == "succeeded"
    assert [a["status_code"] for a in shown.json()["attempts"]] == [200]
    hidden = run_cli(capsys, "deliveries", "show", newest_first[1], "--tenant", "globex")
    assert hidden.code == 1
    assert hidden.stderr.startswith("jobhooks: delivery_not_found: ")


def test_operators_replay_a_stale_message_from_quarantine(
    api: ApiServer, bridge: Bridge, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    added = run_cli(capsys, "webhooks", "add", "--tenant", "acme", "--url", receiver.url)
    secret = added.json()["secret"]
    eight_days_ago = int((datetime.now(UTC) - timedelta(days=8)).timestamp())
    stale = make_job_event(demo_key(), tenant_id="acme", timestamp=eight_days_ago)
    bridge.publish(stale.forwarded().to_json())
    bridge.ingest()

    listed = run_cli(capsys, "quarantine", "list", "--reason", "stale_timestamp")
    assert listed.code == 0, listed.stderr
    header, row = listed.stdout.splitlines()
    assert header.split() == ["ID", "REASON", "STATUS", "RECEIVED"]
    quarantine_id = row.split()[0]
    assert row.split()[1:3] == ["stale_timestamp", "quarantined"]
    shown = run_cli(capsys, "quarantine", "show", quarantine_id).json()
    assert shown["reason"] == "stale_timestamp"
    assert shown["message"].startswith('{"format":"jobhooks.amqp/1"')

    again = run_cli(capsys, "quarantine", "replay", quarantine_id)
    assert again.code == 3
    assert again.json()["outcome"] == "rejected"
    assert again.stderr.startswith("jobhooks: rejected again: stale_timestamp: ")
    accepted = run_cli(capsys, "quarantine", "replay", quarantine_id, "--allow-stale")
    assert accepted.code == 0, accepted.stderr
    assert accepted.json()["outcome"] == "accepted"
    bridge.deliver()
    [webhook] = receiver.requests
    assert Webhook(secret).verify(webhook.body, webhook.headers)["data"]["job_id"] == (
        stale.headers["ce-subject"].decode()
    )
    as_json = run_cli(capsys, "quarantine", "list", "--output", "json").json()
    statuses = {item["quarantine_id"]: item["status"] for item in as_json["messages"]}
    assert statuses[quarantine_id] == "replayed"
