"""Skipped deliveries and recover through the API: an endpoint disabled, back, and made whole.

The real ingest and deliver functions (`functions/`) run against moto's server (`stack`), driven
by the local SQS event source; webhooks go to a receiver on 127.0.0.1 and are verified with
`standardwebhooks` under the subscription's secret.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from jobhooks.storage.times import format_time
from jobhooks.webhook_signature import webhook_id_for
from jobhooks_tools.local.template import LocalResources
from jobhooks_tools.sample_events import demo_key, make_job_event
from standardwebhooks.webhooks import Webhook

from tests.integration.api_support import Bridge, InProcessApi, Receiver, use_context


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
    # A disable made through the API is seen by the next batch, not 30 s later.
    monkeypatch.setenv("JOBHOOKS_SUBSCRIPTION_CACHE_SECONDS", "0")
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


def ingest_one(bridge: Bridge, tenant_id: str = "acme") -> str:
    """One event through ingest (its own batch: a later `created_at` than the one before)."""
    event = make_job_event(demo_key(), tenant_id=tenant_id)
    bridge.publish(event.forwarded().to_json())
    assert bridge.ingest().succeeded == 1
    return str(event.headers["ce-id"].decode())  # type: ignore[union-attr]


def received_ids(receiver: Receiver, secret: str) -> list[str]:
    """The webhook-id of every POST, each checked against its Standard Webhooks signature."""
    ids = []
    for webhook in receiver.requests:
        Webhook(secret).verify(webhook.body, webhook.headers)
        ids.append(webhook.headers["webhook-id"])
    return ids


def deliveries(api: InProcessApi, subscription_id: str) -> dict[str, dict[str, Any]]:
    listed = api.get("/v1/deliveries", subscription_id=subscription_id, limit=100)
    assert listed.status == 200, listed.text
    return {delivery["event_id"]: delivery for delivery in listed.body["deliveries"]}


def recover(api: InProcessApi, subscription_id: str, **body: Any) -> Any:
    return api.post(f"/v1/subscriptions/{subscription_id}/recover", body)


def test_events_of_an_outage_are_skipped_then_recovered_once_oldest_first(
    api: InProcessApi, bridge: Bridge, receiver: Receiver
) -> None:
    subscription_id, secret = subscribe(api, "acme", receiver.url)
    before = ingest_one(bridge)
    assert received_ids(receiver, secret) == [webhook_id_for(before)]
    since = format_time(datetime.now(UTC))
    disabled = api.patch(f"/v1/subscriptions/{subscription_id}", {"status": "disabled"})
    assert disabled.status == 200, disabled.text

    outage = [ingest_one(bridge) for _ in range(3)]
    bridge.deliver()

    assert received_ids(receiver, secret) == [webhook_id_for(before)]  # nothing POSTed
    listed = deliveries(api, subscription_id)
    for event_id in outage:
        assert listed[event_id]["status"] == "skipped"
        assert listed[event_id]["status_reason"] == "subscription_disabled"
        assert listed[event_id]["attempt_count"] == 0
    refused = recover(api, subscription_id, since=since)
    assert refused.status == 409, refused.text
    assert refused.error["code"] == "subscription_not_active"

    enabled = api.patch(f"/v1/subscriptions/{subscription_id}", {"status": "active"})
    assert enabled.status == 200, enabled.text
    # One delivery a call: each page is delivered before the next is sent, so the order the
    # receiver sees is the order recover sends in.
    cursor, pages = None, 0
    while True:
        page = recover(api, subscription_id, since=since, limit=1, cursor=cursor)
        assert page.status == 202, page.text
        assert (page.body["sent"], page.body["by_status"]) == (1, {"skipped": 1})
        pages += 1
        bridge.deliver()
        cursor = page.body["next_cursor"]
        if cursor is None or pages > 3:
            break
    assert pages == 3
    again = recover(api, subscription_id, since=since)
    assert (again.status, again.body["sent"], again.body["next_cursor"]) == (202, 0, None)

    assert received_ids(receiver, secret) == [webhook_id_for(e) for e in [before, *outage]]
    assert {deliveries(api, subscription_id)[e]["status"] for e in outage} == {"succeeded"}


def test_running_recover_twice_before_delivery_sends_each_delivery_once(
    api: InProcessApi, bridge: Bridge, receiver: Receiver
) -> None:
    subscription_id, secret = subscribe(api, "acme", receiver.url)
    since = format_time(datetime.now(UTC) - timedelta(seconds=1))
    api.patch(f"/v1/subscriptions/{subscription_id}", {"status": "disabled"})
    outage = [ingest_one(bridge) for _ in range(2)]
    api.patch(f"/v1/subscriptions/{subscription_id}", {"status": "active"})

    first = recover(api, subscription_id, since=since)
    second = recover(api, subscription_id, since=since)

    assert (first.status, first.body["sent"]) == (202, 2), first.text
    assert (second.status, second.body["sent"]) == (202, 0), second.text
    listed = deliveries(api, subscription_id)
    assert {(listed[e]["status"], listed[e]["status_reason"]) for e in outage} == {
        ("pending", "recovering")
    }
    bridge.deliver()
    assert sorted(received_ids(receiver, secret)) == sorted(webhook_id_for(e) for e in outage)


def test_a_410_disables_and_recover_sends_the_gone_and_the_skipped_deliveries(
    api: InProcessApi, bridge: Bridge, receiver: Receiver
) -> None:
    receiver.statuses = [410]
    subscription_id, secret = subscribe(api, "acme", receiver.url)
    since = format_time(datetime.now(UTC) - timedelta(seconds=1))
    gone = ingest_one(bridge)
    shown = api.get(f"/v1/subscriptions/{subscription_id}")
    assert shown.body["status"] == "disabled"
    skipped = ingest_one(bridge)
    bridge.deliver()
    listed = deliveries(api, subscription_id)
    assert (listed[gone]["status"], listed[skipped]["status"]) == ("gone", "skipped")
    assert len(receiver.requests) == 1

    api.patch(f"/v1/subscriptions/{subscription_id}", {"status": "active"})
    page = recover(api, subscription_id, since=since)
    bridge.deliver()

    assert page.body["by_status"] == {"gone": 1, "skipped": 1}, page.text
    accepted = received_ids(receiver, secret)[1:]
    assert sorted(accepted) == sorted([webhook_id_for(gone), webhook_id_for(skipped)])


def test_deliveries_before_since_and_successes_are_not_sent_again(
    api: InProcessApi, bridge: Bridge, receiver: Receiver
) -> None:
    subscription_id, secret = subscribe(api, "acme", receiver.url)
    api.patch(f"/v1/subscriptions/{subscription_id}", {"status": "disabled"})
    early = ingest_one(bridge)
    since = format_time(datetime.now(UTC))
    late = ingest_one(bridge)
    api.patch(f"/v1/subscriptions/{subscription_id}", {"status": "active"})
    delivered = ingest_one(bridge)

    page = recover(api, subscription_id, since=since)
    bridge.deliver()

    assert page.body["sent"] == 1, page.text
    assert sorted(received_ids(receiver, secret)) == sorted(
        [webhook_id_for(delivered), webhook_id_for(late)]
    )
    assert deliveries(api, subscription_id)[early]["status"] == "skipped"


@pytest.mark.parametrize(
    ("since", "problem"),
    [
        ("yesterday", "not an ISO 8601 time"),
        ("2026-12-06T01:00:00", "no time zone"),
        ("2999-01-01T00:00:00Z", "in the future"),
    ],
)
def test_a_bad_since_is_refused_with_its_reason_code(
    api: InProcessApi, receiver: Receiver, since: str, problem: str
) -> None:
    subscription_id, _ = subscribe(api, "acme", receiver.url)

    answer = recover(api, subscription_id, since=since)

    assert answer.status == 422, answer.text
    assert answer.error["code"] == "invalid_since"
    assert answer.error["field"] == "since"
    assert problem in answer.error["message"]


def test_a_cursor_of_another_subscription_or_since_is_refused(
    api: InProcessApi, bridge: Bridge, receiver: Receiver
) -> None:
    subscription_id, _ = subscribe(api, "acme", receiver.url)
    other_id, _ = subscribe(api, "acme", receiver.url)
    since = format_time(datetime.now(UTC) - timedelta(seconds=1))
    for subscription in (subscription_id, other_id):
        api.patch(f"/v1/subscriptions/{subscription}", {"status": "disabled"})
    ingest_one(bridge)
    ingest_one(bridge)
    for subscription in (subscription_id, other_id):
        api.patch(f"/v1/subscriptions/{subscription}", {"status": "active"})
    page = recover(api, subscription_id, since=since, limit=1)
    cursor = page.body["next_cursor"]
    assert cursor is not None, page.text

    for answer in (
        recover(api, other_id, since=since, cursor=cursor),
        recover(api, subscription_id, since="2026-01-01T00:00:00Z", cursor=cursor),
    ):
        assert answer.status == 422, answer.text
        assert answer.error["code"] == "invalid_cursor"


def test_an_operators_disable_whose_notification_was_refused_is_kept_and_sent_by_recover(
    bridge: Bridge, receiver: Receiver
) -> None:
    """The API keeps the `endpoint.disabled` it could not enqueue on the endpoint's item (its
    whole-item write: the function has no UpdateItem there), and recover sends it first."""
    from jobhooks.notifications.notifier import Notifier

    class RefusingQueue:
        def enqueue(self, event_id: str, tasks: Any) -> int:
            raise RuntimeError("SQS is down")

    inbox = Receiver()
    api = InProcessApi()
    try:
        with use_context(api.module, allow_private_webhooks=True) as context:
            created = api.post(
                "/v1/subscriptions",
                {"tenant_id": "acme", "url": inbox.url, "event_types": ["endpoint.disabled"]},
            )
            notified_secret = created.body["secret"]
            subscription_id, _ = subscribe(api, "acme", receiver.url)
            # The API's notifier, with a delivery queue that refuses (a cached property).
            context.__dict__["notifier"] = Notifier(
                subscriptions=context.subscriptions, deliveries=RefusingQueue()
            )
            path = f"/v1/subscriptions/{subscription_id}"
            disabled = api.patch(path, {"status": "disabled"})
            assert disabled.status == 200, disabled.text
            del context.__dict__["notifier"]
            [owed] = context.subscriptions.get(subscription_id).health.owed
            assert (owed.type, owed.data["reason"]) == ("endpoint.disabled", "operator")
            shown = api.get(path).body
            assert shown["updated_at"] == disabled.body["updated_at"]  # kept, not an update
            assert bridge.deliver().succeeded == 0  # nothing was enqueued

            api.patch(path, {"status": "active"})
            since = format_time(datetime.now(UTC) - timedelta(minutes=1))
            assert recover(api, subscription_id, since=since).status == 202
            bridge.deliver()
            assert context.subscriptions.get(subscription_id).health.owed == ()
            assert recover(api, subscription_id, since=since).status == 202  # nothing owed now
            bridge.deliver()
    finally:
        inbox.stop()

    [webhook] = inbox.requests
    Webhook(notified_secret).verify(webhook.body, webhook.headers)
    document = webhook.json()
    assert (document["type"], document["data"]["subscription_id"]) == (
        "endpoint.disabled",
        subscription_id,
    )
    assert document["data"]["reason"] == "operator"
