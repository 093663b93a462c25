"""Replays through the API end to end: parked deliveries, events and quarantined messages.

The real ingest and deliver functions (`functions/`) run against moto's server (`stack`), driven
by the local SQS event source; webhooks go to a receiver on 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from jobhooks.inbound.keys import key_from_hex
from jobhooks.storage.times import format_time
from jobhooks_tools.local.template import LocalResources
from jobhooks_tools.sample_events import SOURCE, demo_key, make_job_event
from standardwebhooks.webhooks import Webhook

from tests.integration.api_support import Bridge, InProcessApi, Receiver, use_context
from tests.integration.history_support import Deliveries

# A Fetcher key the bridge does not know yet: the producer rotated before the bridge did.
NEW_FETCHER_KEY = key_from_hex("5e" * 32)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.stop()


@pytest.fixture
def bridge(stack: LocalResources, monkeypatch: pytest.MonkeyPatch) -> Bridge:
    monkeypatch.setenv("JOBHOOKS_ALLOW_PRIVATE_WEBHOOKS", "true")
    # One attempt, then the delivery is parked: the DLQ path without waiting for backoff.
    monkeypatch.setenv("JOBHOOKS_RETRY_SCHEDULE", "0")
    monkeypatch.setenv("JOBHOOKS_DELIVERY_TIMEOUT_SECONDS", "5")
    return Bridge.start(stack)


@pytest.fixture
def api(bridge: Bridge) -> Iterator[InProcessApi]:
    api = InProcessApi()
    with use_context(api.module, allow_private_webhooks=True):
        yield api


def subscribe(api: InProcessApi, tenant_id: str, url: str) -> tuple[str, str]:
    created = api.post("/v1/subscriptions", {"tenant_id": tenant_id, "url": url})
    assert created.status == 201, created.text
    return created.body["subscription_id"], created.body["secret"]


def verified(receiver: Receiver, secret: str) -> list[dict[str, Any]]:
    return [Webhook(secret).verify(webhook.body, webhook.headers) for webhook in receiver.requests]


def test_parked_delivery_comes_back_by_redrive_and_by_replay(
    api: InProcessApi, bridge: Bridge, receiver: Receiver
) -> None:
    receiver.statuses = [500]
    subscription_id, secret = subscribe(api, "acme", receiver.url)
    event = make_job_event(demo_key(), tenant_id="acme")
    bridge.publish(event.forwarded().to_json())
    assert bridge.ingest().succeeded == 1
    bridge.deliver()

    listed = api.get("/v1/deliveries", subscription_id=subscription_id)
    assert listed.status == 200, listed.text
    [parked] = listed.body["deliveries"]
    assert parked["status"] == "parked"
    assert parked["last_attempt"]["status_code"] == 500
    delivery_id = parked["delivery_id"]
    dlq = api.get("/v1/dlq")
    assert dlq.body["approximate_count"] == 1
    [message] = dlq.body["messages"]
    assert message["delivery_id"] == delivery_id
    assert message["park_reason"] == "attempts_exhausted"
    assert message["last_result"] == "http_500"
    assert api.get("/v1/dlq").body["approximate_count"] == 1, "peeking leaves it parked"

    redriven = api.post("/v1/dlq/redrive", {"queue": "delivery"})
    assert redriven.status == 202, redriven.text
    assert redriven.body == {
        "queue": "delivery",
        "method": "resend",
        "moved": 1,
        "remaining": 0,
        "task_handle": None,
    }
    bridge.deliver()
    assert len(receiver.requests) == 2
    shown = api.get(f"/v1/deliveries/{delivery_id}")
    assert shown.body["status"] == "succeeded"
    assert [attempt["status_code"] for attempt in shown.body["attempts"]] == [500, 200]

    replayed = api.post(f"/v1/deliveries/{delivery_id}/replay")
    assert replayed.status == 202, replayed.text
    assert replayed.body["delivery_id"] == delivery_id
    bridge.deliver()
    assert len(receiver.requests) == 3, "a replay is POSTed even after a success"
    bodies = verified(receiver, secret)
    assert {body["data"]["event_id"] for body in bodies} == {parked["event_id"]}
    assert len({webhook.headers["webhook-id"] for webhook in receiver.requests}) == 1
    by_event = api.get("/v1/deliveries", event_id=parked["event_id"])
    assert by_event.body["deliveries"][0]["attempt_count"] == 3


def test_a_first_attempt_success_is_shown_listed_and_replayed(
    stack: LocalResources, api: InProcessApi, bridge: Bridge, receiver: Receiver
) -> None:
    # Ingest POSTed it and kept the success in its batch's page: no attempt-log record.
    subscription_id, secret = subscribe(api, "acme", receiver.url)
    deliveries = Deliveries(stack)
    [event, other] = deliveries.claim_batch(2, [subscription_id])
    deliveries.succeed([event, other], subscription_id)
    delivery_id = event.delivery_id(subscription_id)

    shown = api.get(f"/v1/deliveries/{delivery_id}")
    assert shown.status == 200, shown.text
    assert shown.body["status"] == "succeeded" and shown.body["attempt_count"] == 1
    assert shown.body["created_at"] == format_time(event.batch_time)
    assert [(a["n"], a["status_code"]) for a in shown.body["attempts"]] == [(1, 200)]
    nowhere = "dlv_" + "0" * 32
    assert api.get(f"/v1/deliveries/{delivery_id}", tenant_id="globex").text == api.get(
        f"/v1/deliveries/{nowhere}", tenant_id="globex"
    ).text.replace(nowhere, delivery_id)
    listed = api.get("/v1/deliveries", subscription_id=subscription_id, limit=1)
    assert [d["delivery_id"] for d in listed.body["deliveries"]] == [
        max(delivery_id, other.delivery_id(subscription_id))
    ]
    rest = api.get(
        "/v1/deliveries", subscription_id=subscription_id, cursor=listed.body["next_cursor"]
    )
    assert rest.body["next_cursor"] is None
    assert len(rest.body["deliveries"]) == 1
    by_event = api.get("/v1/deliveries", event_id=event.event_id)
    assert [d["delivery_id"] for d in by_event.body["deliveries"]] == [delivery_id]
    assert by_event.body["deliveries"][0]["last_attempt"]["status_code"] == 200
    assert api.get("/v1/deliveries", event_id=event.event_id, tenant_id="globex").body == {
        "deliveries": [],
        "next_cursor": None,
    }

    replayed = api.post(f"/v1/deliveries/{delivery_id}/replay")
    assert replayed.status == 202, replayed.text
    assert replayed.body["delivery_id"] == delivery_id
    assert replayed.body["webhook_id"] == shown.body["webhook_id"]
    # Peeked at, and left visible for the deliver function.
    [message] = bridge.sqs.receive_message(QueueUrl=bridge.delivery_queue_url, VisibilityTimeout=0)[
        "Messages"
    ]
    task = json.loads(message["Body"])
    assert task["replay"] is True and task["delivery_id"] == delivery_id
    assert task["payload"] == event.payload
    bridge.deliver()
    [webhook] = verified(receiver, secret)
    assert webhook["data"]["event_id"] == event.event_id
    assert receiver.requests[0].headers["webhook-id"] == shown.body["webhook_id"]

    again = api.get(f"/v1/deliveries/{delivery_id}")
    assert again.body["status"] == "succeeded" and again.body["attempt_count"] == 2
    assert [a["status_code"] for a in again.body["attempts"]] == [200, 200]
    assert again.body["created_at"] == shown.body["created_at"]
    everything = api.get("/v1/deliveries", subscription_id=subscription_id)
    assert [d["delivery_id"] for d in everything.body["deliveries"]].count(delivery_id) == 1


def test_unmatched_event_is_listed_and_replayed_to_a_new_subscription(
    api: InProcessApi, bridge: Bridge, receiver: Receiver
) -> None:
    event = make_job_event(demo_key(), tenant_id="globex", status="failed")
    bridge.publish(event.forwarded().to_json())
    bridge.ingest()
    unmatched = api.get("/v1/events/unmatched", tenant_id="globex")
    assert unmatched.status == 200, unmatched.text
    [listed] = unmatched.body["events"]
    assert listed["event_type"] == "job.failed"
    event_id = listed["event_id"]

    subscription_id, secret = subscribe(api, "globex", receiver.url)
    assert api.post(f"/v1/events/{event_id}/replay", tenant_id="acme").status == 404
    replayed = api.post(f"/v1/events/{event_id}/replay")
    assert replayed.status == 202, replayed.text
    assert [d["subscription_id"] for d in replayed.body["deliveries"]] == [subscription_id]
    bridge.deliver()
    [body] = verified(receiver, secret)
    assert body["type"] == "job.failed"
    assert body["data"]["event_id"] == event_id
    assert api.get("/v1/events/unmatched", tenant_id="globex").body["events"] == []
    assert api.post("/v1/events/fetcher.job.completed.nope/replay").status == 404


def test_quarantined_message_is_replayed_after_the_key_rotation_and_with_stale_override(
    stack: LocalResources, api: InProcessApi, bridge: Bridge, receiver: Receiver
) -> None:
    _, secret = subscribe(api, "acme", receiver.url)
    rotated = make_job_event(NEW_FETCHER_KEY, tenant_id="acme")
    eight_days_ago = int((datetime.now(UTC) - timedelta(days=8)).timestamp())
    stale = make_job_event(demo_key(), tenant_id="acme", timestamp=eight_days_ago)
    rotated_message = rotated.forwarded().to_json()
    bridge.publish(rotated_message)
    bridge.publish(stale.forwarded().to_json())
    bridge.ingest()

    listed = api.get("/v1/quarantine")
    assert listed.status == 200, listed.text
    by_reason = {item["reason"]: item for item in listed.body["messages"]}
    assert set(by_reason) == {"signature_mismatch", "stale_timestamp"}
    mismatch_id = by_reason["signature_mismatch"]["quarantine_id"]
    stale_id = by_reason["stale_timestamp"]["quarantine_id"]
    shown = api.get(f"/v1/quarantine/{mismatch_id}")
    assert shown.body["message"] == rotated_message
    only_stale = api.get("/v1/quarantine", reason="stale_timestamp")
    assert [item["quarantine_id"] for item in only_stale.body["messages"]] == [stale_id]

    # The operator adds the producer's new key to the bridge's key secret.
    boto3.client("secretsmanager").put_secret_value(
        SecretId=stack.refs["FetcherKeysSecret"],
        SecretString=f"{demo_key().hex},{NEW_FETCHER_KEY.hex}",
    )
    accepted = api.post(f"/v1/quarantine/{mismatch_id}/replay")
    assert accepted.status == 200, accepted.text
    assert accepted.body["outcome"] == "accepted"
    assert accepted.body["deliveries"] == 1

    still_stale = api.post(f"/v1/quarantine/{stale_id}/replay")
    assert still_stale.body["outcome"] == "rejected"
    assert still_stale.body["reason"] == "stale_timestamp"
    assert still_stale.body["quarantined_as"]
    overridden = api.post(f"/v1/quarantine/{stale_id}/replay", {"allow_stale": True})
    assert overridden.body["outcome"] == "accepted", overridden.text

    bridge.deliver()
    bodies = verified(receiver, secret)
    assert sorted(body["data"]["job_id"] for body in bodies) == sorted(
        [rotated.headers["ce-subject"].decode(), stale.headers["ce-subject"].decode()]
    )
    marked = api.get(f"/v1/quarantine/{mismatch_id}").body
    assert marked["status"] == "replayed"
    assert marked["replay_outcome"] == "accepted"


def test_an_untrusted_source_is_replayed_once_the_allowlist_names_it(
    stack: LocalResources, api: InProcessApi, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, secret = subscribe(api, "acme", receiver.url)
    # The stack's AllowedSources names the first producer only.
    monkeypatch.setenv("JOBHOOKS_ALLOWED_SOURCES", SOURCE)
    bridge = Bridge.start(stack)  # the ingest function reads its settings at start
    second = make_job_event(demo_key(), tenant_id="acme").with_headers(ce_source=b"//eu/worker")
    bridge.publish(second.forwarded().to_json())
    bridge.ingest()

    [item] = api.get("/v1/quarantine", reason="untrusted_source").body["messages"]
    quarantine_id = item["quarantine_id"]
    detail = api.get(f"/v1/quarantine/{quarantine_id}").body["detail"]
    assert "'//eu/worker'" in detail and "JOBHOOKS_ALLOWED_SOURCES" in detail
    again = api.post(f"/v1/quarantine/{quarantine_id}/replay")
    assert (again.body["outcome"], again.body["reason"]) == ("rejected", "untrusted_source")

    # The operator adds the second producer's source: `sam deploy` gives the API function (new
    # execution environments) the new list, as it gives the ingest function.
    monkeypatch.setenv("JOBHOOKS_ALLOWED_SOURCES", f"{SOURCE},//eu/worker")
    with use_context(api.module, allow_private_webhooks=True):
        accepted = api.post(f"/v1/quarantine/{quarantine_id}/replay")
    assert accepted.status == 200, accepted.text
    assert (accepted.body["outcome"], accepted.body["deliveries"]) == ("accepted", 1)
    bridge.deliver()
    [body] = verified(receiver, secret)
    assert body["data"]["queue_name"] == "//eu/worker"


def test_an_events_deliveries_are_listed_from_the_subscriptions_its_claim_records(
    stack: LocalResources, api: InProcessApi, bridge: Bridge, receiver: Receiver
) -> None:
    first, _ = subscribe(api, "acme", receiver.url)
    event = make_job_event(demo_key(), tenant_id="acme")
    event_id = event.headers["ce-id"].decode()  # type: ignore[union-attr]
    bridge.publish(event.forwarded().to_json())
    bridge.ingest()
    bridge.deliver()
    # A replay to a subscription added later joins the recorded ones; the first one, disabled
    # meanwhile, no longer matches but its delivery stays listed.
    second, _ = subscribe(api, "acme", receiver.url)
    disabled = api.patch(f"/v1/subscriptions/{first}", {"status": "disabled"})
    assert disabled.status == 200, disabled.text
    assert api.post(f"/v1/events/{event_id}/replay").status == 202
    bridge.deliver()

    def listed(**query: Any) -> list[str]:
        answer = api.get("/v1/deliveries", event_id=event_id, **query)
        assert answer.status == 200, answer.text
        return [delivery["subscription_id"] for delivery in answer.body["deliveries"]]

    assert listed() == sorted([first, second])
    assert listed(tenant_id="globex") == []
    paged = api.get("/v1/deliveries", event_id=event_id, limit=1)
    assert paged.body["next_cursor"] is not None

    # A claim completed before it recorded its subscriptions: the tenant's stand in for them.
    dynamodb = boto3.session.Session().client("dynamodb")
    dynamodb.update_item(
        TableName=stack.table_name("ClaimsTable"),
        Key={"event_id": {"S": event_id}},
        UpdateExpression="REMOVE subscription_ids",
    )
    assert listed() == sorted([first, second])


def test_noncharacters_in_metadata_and_error_text_survive_every_sqs_leg(
    api: InProcessApi, bridge: Bridge, receiver: Receiver
) -> None:
    """U+FFFE and U+FFFF are valid Unicode, so a producer may send them in metadata or error
    text, but SQS refuses them in a message body: every delivery task the bridge sends (fan-out,
    delivery replay, event replay, DLQ park and redrive) must carry them escaped, and the
    receiver must still get the exact bytes that were signed."""
    _, secret = subscribe(api, "acme", receiver.url)
    metadata = {"source": "payments", "note": "tab\ufffeend\uffff", "emoji": "\U0001f680"}
    completed = make_job_event(
        demo_key(),
        tenant_id="acme",
        job_id="job-nonchar-1",
        body=_body({"jobId": "job-nonchar-1", "status": "completed", "metadata": metadata}),
    )
    failed = make_job_event(
        demo_key(),
        tenant_id="acme",
        status="failed",
        job_id="job-nonchar-2",
        body=_body(
            {
                "jobId": "job-nonchar-2",
                "status": "failed",
                "metadata": {"error": {"message": "row 7: bad byte \uffff\ufffe in column"}},
            }
        ),
    )
    for event in (completed, failed):
        bridge.publish(event.forwarded().to_json())
    assert bridge.ingest().succeeded == 2, "the fan-out was refused"
    bridge.deliver()
    by_job = {body["data"]["job_id"]: body for body in verified(receiver, secret)}
    assert by_job["job-nonchar-1"]["data"]["fetcher"]["metadata"] == metadata
    error = by_job["job-nonchar-2"]["data"]["fetcher"]["error"]["message"]
    assert error == "row 7: bad byte \uffff\ufffe in column"
    first = {webhook.json()["data"]["job_id"]: webhook.body for webhook in receiver.requests}
    # The webhook itself is UTF-8 JSON over HTTP: the characters are sent as they are.
    assert "\ufffe".encode() in first["job-nonchar-1"]

    event_id = by_job["job-nonchar-1"]["data"]["event_id"]
    [delivery] = api.get("/v1/deliveries", event_id=event_id).body["deliveries"]
    assert api.post(f"/v1/deliveries/{delivery['delivery_id']}/replay").status == 202
    bridge.deliver()
    assert api.post(f"/v1/events/{event_id}/replay").status == 202
    receiver.statuses = [500]  # this replay's one attempt fails: parked in the delivery DLQ
    bridge.deliver()
    assert api.get("/v1/dlq").body["approximate_count"] == 1
    redriven = api.post("/v1/dlq/redrive", {"queue": "delivery"})
    assert redriven.body["moved"] == 1, redriven.text
    bridge.deliver()

    again = [w for w in receiver.requests[2:] if w.json()["data"]["job_id"] == "job-nonchar-1"]
    assert len(again) == 3, "delivery replay, event replay (answered 500), redrive"
    assert {webhook.body for webhook in again} == {first["job-nonchar-1"]}
    for webhook in again:
        Webhook(secret).verify(webhook.body, webhook.headers)


def _body(document: dict[str, Any]) -> bytes:
    # As the producer (Go's encoding/json) writes it: UTF-8, the noncharacters unescaped.
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
