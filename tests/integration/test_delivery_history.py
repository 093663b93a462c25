"""The operators' view of deliveries (moto): first-attempt pages and attempt-log records read as
one history, by id, per event and per subscription (`jobhooks.delivery.history`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
import pytest
from jobhooks.delivery.exceptions import DeliveryNotFoundError
from jobhooks.delivery.first_attempts import new_batch_id
from jobhooks.delivery.model import DeliveryAttempt, DeliveryRecord, DeliveryStatus
from jobhooks.delivery_task import delivery_id_for, legacy_delivery_id_for, parse_delivery_id
from jobhooks.inbound.job_events import read_forwarded_message
from jobhooks.ingest.model import Duplicate, FanOutPlan
from jobhooks.ingest.settings import IngestSettings
from jobhooks.management.context import build_management_context
from jobhooks.storage.cursors import encode_cursor
from jobhooks.storage.exceptions import InvalidCursorError
from jobhooks.storage.times import epoch_seconds, format_time
from jobhooks_tools.local.template import LocalResources
from jobhooks_tools.sample_events import demo_key, make_job_event

from tests.integration.api_support import management_settings
from tests.integration.history_support import Deliveries, Event, delivery_ids


@pytest.fixture
def deliveries(stack: LocalResources) -> Deliveries:
    return Deliveries(stack)


def walk_subscription(
    deliveries: Deliveries, subscription_id: str, limit: int, **scope: str
) -> list[str]:
    """Every page of the subscription's listing, following each cursor to the end."""
    listed: list[str] = []
    cursor: str | None = None
    for _ in range(100):
        page = deliveries.history.list_by_subscription(
            subscription_id, limit=limit, cursor=cursor, **scope
        )
        assert len(page.deliveries) <= limit
        listed.extend(delivery_ids(page))
        cursor = page.next_cursor
        if cursor is None:
            return listed
        assert page.deliveries, "a cursor never leads to an empty page"
    raise AssertionError("the cursors never ended")


def walk_event(
    deliveries: Deliveries, event: Event, subscription_ids: list[str], limit: int
) -> list[DeliveryRecord]:
    listed: list[DeliveryRecord] = []
    cursor: str | None = None
    while True:
        page = deliveries.history.list_by_event(
            event.event_id, subscription_ids=subscription_ids, limit=limit, cursor=cursor
        )
        listed.extend(page.deliveries)
        cursor = page.next_cursor
        if cursor is None:
            return listed


# -- by id ----------------------------------------------------------------------------------------


def test_a_first_attempt_success_is_found_by_its_id_in_its_batchs_page(
    deliveries: Deliveries,
) -> None:
    [event, other] = deliveries.claim_batch(2, ["sub_a"])
    deliveries.clock.advance(milliseconds=350)
    deliveries.succeed([event, other], "sub_a")

    shown = deliveries.history.get(event.delivery_id("sub_a"))

    assert shown.event_id == event.event_id and shown.subscription_id == "sub_a"
    assert shown.tenant_id == "acme" and shown.event_type == event.event_type
    assert shown.status is DeliveryStatus.SUCCEEDED
    assert [(a.n, a.status_code) for a in shown.attempts] == [(1, 200)]
    assert shown.attempt_count == 1
    assert shown.created_at == event.batch_time
    assert shown.succeeded_at == deliveries.clock.now
    assert deliveries.history.get(event.delivery_id("sub_a"), tenant_id="acme") == shown
    with pytest.raises(DeliveryNotFoundError):
        deliveries.history.get(event.delivery_id("sub_a"), tenant_id="globex")
    with pytest.raises(DeliveryNotFoundError):  # the event went to sub_a only
        deliveries.history.get(event.delivery_id("sub_b"))


def test_a_failed_first_attempt_is_found_in_the_attempt_log(deliveries: Deliveries) -> None:
    [event] = deliveries.claim_batch(1, ["sub_a"])
    deliveries.attempt(event, "sub_a", 503)

    shown = deliveries.history.get(event.delivery_id("sub_a"))

    assert shown.status is DeliveryStatus.PENDING
    assert [(a.n, a.status_code) for a in shown.attempts] == [(1, 503)]
    with pytest.raises(DeliveryNotFoundError):
        deliveries.history.get(event.delivery_id("sub_a"), tenant_id="globex")


def test_a_replayed_first_attempt_success_is_one_delivery_with_the_page_attempt_first(
    deliveries: Deliveries,
) -> None:
    [event] = deliveries.claim_batch(1, ["sub_a"])
    deliveries.succeed([event], "sub_a")
    deliveries.clock.advance(hours=2)
    deliveries.attempt(event, "sub_a", 502, replay=True)

    shown = deliveries.history.get(event.delivery_id("sub_a"))

    assert [(a.n, a.status_code) for a in shown.attempts] == [(1, 200), (1, 502)]
    assert shown.attempt_count == 2
    assert shown.status is DeliveryStatus.PENDING  # the latest word is the record's
    assert shown.created_at == event.batch_time
    assert shown.updated_at == deliveries.clock.now


def test_an_id_resolves_while_its_page_is_kept_and_the_claim_outlives_it(
    deliveries: Deliveries,
) -> None:
    # Claims would be kept 11 days (7 + 4) for deduplication alone; the page is kept 30.
    [event] = deliveries.claim_batch(1, ["sub_a"])
    deliveries.succeed([event], "sub_a")
    delivery_id = event.delivery_id("sub_a")

    deliveries.clock.advance(days=29, hours=23)
    assert deliveries.history.get(delivery_id).status is DeliveryStatus.SUCCEEDED
    assert delivery_ids(deliveries.history.list_by_subscription("sub_a")) == [delivery_id]
    deliveries.clock.advance(days=1)
    with pytest.raises(DeliveryNotFoundError):
        deliveries.history.get(delivery_id)
    assert deliveries.history.list_by_subscription("sub_a").deliveries == ()


# -- per event ------------------------------------------------------------------------------------


def test_an_events_deliveries_come_from_its_page_and_its_records_one_per_subscription(
    deliveries: Deliveries,
) -> None:
    subscriptions = ["sub_a", "sub_b", "sub_c", "sub_d", "sub_e"]
    [event, neighbour] = deliveries.claim_batch(2, subscriptions)
    deliveries.succeed([event, neighbour], "sub_a")  # page only
    deliveries.attempt(event, "sub_b", 500)  # record only
    deliveries.succeed([event], "sub_c")  # page, then a replay's record
    deliveries.clock.advance(minutes=5)
    deliveries.attempt(event, "sub_c", 200, replay=True)
    deliveries.succeed([neighbour], "sub_d")  # sub_d: nothing kept for this event
    deliveries.succeed([event], "sub_e")

    listed = walk_event(deliveries, event, subscriptions, limit=50)
    assert [d.subscription_id for d in listed] == ["sub_a", "sub_b", "sub_c", "sub_e"]
    by_subscription = {d.subscription_id: d for d in listed}
    assert [a.status_code for a in by_subscription["sub_c"].attempts] == [200, 200]
    assert by_subscription["sub_c"].attempt_count == 2
    assert by_subscription["sub_c"] == deliveries.history.get(event.delivery_id("sub_c"))
    assert by_subscription["sub_b"].status is DeliveryStatus.PENDING
    for limit in (1, 2, 3, 4, 5):
        assert walk_event(deliveries, event, subscriptions, limit) == listed, limit

    assert (
        deliveries.history.list_by_event(
            event.event_id, subscription_ids=subscriptions, tenant_id="globex"
        ).deliveries
        == ()
    )
    cursor = deliveries.history.list_by_event(
        event.event_id, subscription_ids=subscriptions, limit=1
    ).next_cursor
    with pytest.raises(InvalidCursorError):  # bound to its event
        deliveries.history.list_by_event(
            neighbour.event_id, subscription_ids=subscriptions, cursor=cursor
        )


def test_the_legacy_id_is_the_hashed_id_deliveries_had_before_ids_named_their_event() -> None:
    event_id = "fetcher.job.completed.0b9f6f0e-3c7a-4d59-9a43-6c1f2f0d7e11"
    # The value the earlier `delivery_id_for` (sha256 of "<event id>\n<subscription id>") gave.
    assert legacy_delivery_id_for(event_id, "sub_a") == "dlv_b36a405048f6b3dcd1dae1c046c2f6a3"
    assert parse_delivery_id(legacy_delivery_id_for(event_id, "sub_a")) is None


def record_under_legacy_id(
    deliveries: Deliveries, event: Event, subscription_id: str, status: int
) -> str:
    """A delivery recorded before the id change: its record's key is the hashed id."""
    legacy_id = legacy_delivery_id_for(event.event_id, subscription_id)
    task = event.task(subscription_id).model_copy(update={"delivery_id": legacy_id})
    attempt = DeliveryAttempt(n=1, at=deliveries.clock.now, status_code=status, latency_ms=9)
    succeeded = 200 <= status < 300
    assert deliveries.log.record_attempt(
        task, DeliveryStatus.SUCCEEDED if succeeded else DeliveryStatus.PENDING, attempt
    )
    return legacy_id


def test_deliveries_recorded_under_legacy_ids_are_listed_by_event(
    deliveries: Deliveries,
) -> None:
    subscriptions = ["sub_a", "sub_b", "sub_c", "sub_d"]
    [event] = deliveries.claim_batch(1, subscriptions)
    legacy_a = record_under_legacy_id(deliveries, event, "sub_a", 200)
    record_under_legacy_id(deliveries, event, "sub_b", 500)  # and later under the new id:
    deliveries.attempt(event, "sub_b", 200, n=2)
    deliveries.succeed([event], "sub_c")  # a page entry, no record
    legacy_d = record_under_legacy_id(deliveries, event, "sub_d", 503)

    listed = walk_event(deliveries, event, subscriptions, limit=50)

    assert [d.subscription_id for d in listed] == subscriptions
    by_subscription = {d.subscription_id: d for d in listed}
    assert by_subscription["sub_a"].delivery_id == legacy_a
    assert by_subscription["sub_a"].status is DeliveryStatus.SUCCEEDED
    # Under both ids, the newer id's record is the delivery.
    assert by_subscription["sub_b"].delivery_id == event.delivery_id("sub_b")
    assert [a.status_code for a in by_subscription["sub_b"].attempts] == [200]
    assert by_subscription["sub_c"].delivery_id == event.delivery_id("sub_c")
    assert by_subscription["sub_d"].delivery_id == legacy_d
    assert by_subscription["sub_d"].status is DeliveryStatus.PENDING
    for limit in (1, 2, 3):
        assert walk_event(deliveries, event, subscriptions, limit) == listed, limit
    # A legacy id is still found by id (GetItem on its record).
    assert deliveries.history.get(legacy_a) == by_subscription["sub_a"]


def test_an_events_listing_reads_both_ids_of_more_subscriptions_than_one_call_takes(
    deliveries: Deliveries,
) -> None:
    # 60 subscriptions: 120 keys, more than one BatchGetItem's 100.
    subscriptions = [f"sub_{n:03d}" for n in range(60)]
    [event] = deliveries.claim_batch(1, subscriptions)
    for subscription_id in subscriptions[::2]:
        record_under_legacy_id(deliveries, event, subscription_id, 200)
    for subscription_id in subscriptions[1::2]:
        deliveries.attempt(event, subscription_id, 500)

    listed = walk_event(deliveries, event, subscriptions, limit=100)

    assert [d.subscription_id for d in listed] == subscriptions
    assert [d.delivery_id for d in listed[:2]] == [
        legacy_delivery_id_for(event.event_id, subscriptions[0]),
        event.delivery_id(subscriptions[1]),
    ]


# -- per subscription -----------------------------------------------------------------------------


def test_a_subscriptions_pages_and_records_list_in_one_order_from_every_cursor(
    deliveries: Deliveries,
) -> None:
    expected: list[tuple[datetime, str]] = []

    def kept(event: Event, created_at: datetime) -> None:
        expected.append((created_at, event.delivery_id("sub_a")))

    # Batch 1: three successes and a failure; the failure's record is made at the batch's time.
    first = deliveries.claim_batch(4, ["sub_a"])
    deliveries.succeed(first[:3], "sub_a")
    deliveries.clock.now = first[3].batch_time
    deliveries.attempt(first[3], "sub_a", 500)
    for event in first:
        kept(event, event.batch_time)

    # A record of its own (no claim names a page for it), between two batches.
    deliveries.clock.advance(seconds=1)
    [loner] = deliveries.claim_batch(1, ["sub_a"], tenant_id="acme")
    deliveries.attempt(loner, "sub_a", 404)
    kept(loner, loner.batch_time)

    # Batches 2 and 3: one invocation, two completion records, pages at the same millisecond.
    deliveries.clock.advance(seconds=1)
    base = new_batch_id(deliveries.clock.now)
    second = deliveries.claim_batch(2, ["sub_a"], batch_id=base + ".0")
    third = deliveries.claim_batch(3, ["sub_a"], batch_id=base + ".1")
    deliveries.succeed(second + third, "sub_a")
    for event in second + third:
        kept(event, event.batch_time)

    # Batch 4: a success replayed an hour later (a page entry and a record: listed once, at the
    # page's place) and a success of another subscription (not listed).
    deliveries.clock.advance(seconds=1)
    fourth = deliveries.claim_batch(2, ["sub_a", "sub_b"])
    deliveries.succeed(fourth, "sub_a")
    deliveries.succeed(fourth, "sub_b")
    for event in fourth:
        kept(event, event.batch_time)
    deliveries.clock.advance(hours=1)
    deliveries.attempt(fourth[0], "sub_a", 200, replay=True)

    # Retries of batch 1's failure do not move it: a delivery is created once.
    deliveries.attempt(first[3], "sub_a", 500, n=2)

    order = [delivery_id for _, delivery_id in sorted(expected, reverse=True)]
    assert len(order) == len(set(order)) == 12
    assert walk_subscription(deliveries, "sub_a", limit=100) == order
    for limit in range(1, len(order) + 1):
        assert walk_subscription(deliveries, "sub_a", limit) == order, limit

    replayed = deliveries.history.list_by_subscription("sub_a", limit=100).deliveries
    [shown] = [d for d in replayed if d.delivery_id == fourth[0].delivery_id("sub_a")]
    assert shown == deliveries.history.get(shown.delivery_id)
    assert [a.status_code for a in shown.attempts] == [200, 200]
    assert walk_subscription(deliveries, "sub_a", 3, tenant_id="acme") == order
    assert walk_subscription(deliveries, "sub_a", 3, tenant_id="globex") == []


def test_deliveries_of_the_same_millisecond_resume_exactly_after_the_cursor(
    deliveries: Deliveries,
) -> None:
    # Page entries and records, all created in one millisecond: the listing orders them by id.
    events = deliveries.claim_batch(6, ["sub_a"])
    deliveries.succeed(events[:3], "sub_a")
    for event in events[3:]:
        deliveries.attempt(event, "sub_a", 500)
    assert {d.created_at for d in deliveries.history.list_by_subscription("sub_a").deliveries} == {
        events[0].batch_time
    }

    order = sorted((event.delivery_id("sub_a") for event in events), reverse=True)
    for limit in range(1, 7):
        assert walk_subscription(deliveries, "sub_a", limit) == order, limit


def test_a_cursor_from_the_index_listing_keeps_working(deliveries: Deliveries) -> None:
    # Deliveries recorded before first attempts: what today's cursors were handed out over.
    events = deliveries.claim_batch(3, ["sub_a"])
    for event in events:
        deliveries.clock.advance(seconds=1)
        deliveries.attempt(event, "sub_a", 500)
    newest = deliveries.history.get(events[2].delivery_id("sub_a"))
    # Byte for byte what the index listing handed out after its first page of one.
    old = encode_cursor(
        {
            "i": "by_subscription",
            "p": "sub_a",
            "d": newest.delivery_id,
            "s": format_time(newest.created_at),
        }
    )
    assert deliveries.history.list_by_subscription("sub_a", limit=1).next_cursor == old

    resumed = deliveries.history.list_by_subscription("sub_a", cursor=old)

    assert delivery_ids(resumed) == [e.delivery_id("sub_a") for e in reversed(events[:2])]
    with pytest.raises(InvalidCursorError):
        deliveries.history.list_by_subscription("sub_b", cursor=old)
    with pytest.raises(InvalidCursorError):
        deliveries.history.list_by_subscription("sub_a", cursor="bm90LWEtY3Vyc29y")


def test_a_cursor_whose_time_is_not_a_time_is_invalid(deliveries: Deliveries) -> None:
    # Every other field well formed, so only the time can be what is refused.
    base = {"i": "by_subscription", "p": "sub_a", "d": delivery_id_for("evt-1", "sub_a")}
    for moment in ("yesterday", "2026-07-13T18:04:11"):  # no offset: not one we hand out
        cursor = encode_cursor({**base, "s": moment})
        with pytest.raises(InvalidCursorError):
            deliveries.history.list_by_subscription("sub_a", cursor=cursor)
    later = encode_cursor({**base, "s": format_time(deliveries.clock.now + timedelta(days=1))})
    assert deliveries.history.list_by_subscription("sub_a", cursor=later).deliveries == ()


def test_expired_pages_are_not_listed_and_newer_records_still_are(
    deliveries: Deliveries,
) -> None:
    [old] = deliveries.claim_batch(1, ["sub_a"])
    deliveries.succeed([old], "sub_a")
    deliveries.clock.advance(days=20)
    [recent] = deliveries.claim_batch(1, ["sub_a"])
    deliveries.attempt(recent, "sub_a", 500)
    deliveries.clock.advance(minutes=1)
    deliveries.attempt(old, "sub_a", 200, replay=True)  # the old success, replayed
    assert delivery_ids(deliveries.history.list_by_subscription("sub_a")) == [
        recent.delivery_id("sub_a"),
        old.delivery_id("sub_a"),  # at its page's place, with the replay's attempt
    ]

    deliveries.clock.advance(days=11)  # the page expired; the records did not

    listed = deliveries.history.list_by_subscription("sub_a").deliveries
    assert [d.delivery_id for d in listed] == [
        old.delivery_id("sub_a"),  # only the replay's record is left: created then
        recent.delivery_id("sub_a"),
    ]
    assert [a.status_code for a in listed[0].attempts] == [200]
    assert listed[0].attempt_count == 1


def test_another_tenants_deliveries_are_not_listed(deliveries: Deliveries) -> None:
    [theirs] = deliveries.claim_batch(1, ["sub_g"], tenant_id="globex")
    deliveries.succeed([theirs], "sub_g")
    [failed] = deliveries.claim_batch(1, ["sub_g"], tenant_id="globex")
    deliveries.attempt(failed, "sub_g", 500)

    assert deliveries.history.list_by_subscription("sub_g", tenant_id="acme").deliveries == ()
    assert len(deliveries.history.list_by_subscription("sub_g", tenant_id="globex").deliveries) == 2
    for event in (theirs, failed):
        with pytest.raises(DeliveryNotFoundError):
            deliveries.history.get(event.delivery_id("sub_g"), tenant_id="acme")
        assert (
            deliveries.history.list_by_event(
                event.event_id, subscription_ids=["sub_g"], tenant_id="acme"
            ).deliveries
            == ()
        )


def test_claims_the_api_writes_outlive_a_longer_delivery_retention(stack: LocalResources) -> None:
    # A quarantine replay claims its event from the API process: with deliveries kept 90 days,
    # so is the claim that resolves their ids.
    context = build_management_context(management_settings(attempt_log_days=90))
    now = datetime.now(UTC)
    sample = make_job_event(demo_key(), tenant_id="acme")
    policy = IngestSettings.from_env().verification_policy(keys=(demo_key(),))
    event = read_forwarded_message(sample.forwarded().to_json(), policy, now)
    plan = FanOutPlan(new_batch_id(now) + ".0", "{}", ("sub_a",))
    assert not isinstance(context.claims.claim_event(event, lease_ms=1000, plan=plan), Duplicate)

    item = boto3.client("dynamodb").get_item(
        TableName=stack.table_name("ClaimsTable"), Key={"event_id": {"S": event.event_id}}
    )["Item"]
    assert int(item["expires_at"]["N"]) >= epoch_seconds(now) + 90 * 86_400
