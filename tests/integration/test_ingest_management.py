"""What the management API calls on ingest: read events, list unmatched ones, re-fan-out, replay.

Events get in through the real handler and poller (`Bridge.run`); the management side is an
`IngestService` of its own, built like the API function would build it (no subscription cache,
so a subscription added a moment ago is seen at once).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from jobhooks.inbound.rejection import Reason
from jobhooks.ingest.exceptions import (
    EventInProgressError,
    EventNotFoundError,
    QuarantinedMessageNotFoundError,
)
from jobhooks.ingest.inbound import InboundMessage
from jobhooks.ingest.model import ClaimState, IngestOutcome, QuarantineStatus
from jobhooks.ingest.quarantine import QuarantineStore
from jobhooks.ingest.service import IngestService
from jobhooks.ingest.settings import IngestSettings
from jobhooks.ingest.wiring import build_ingest_service
from jobhooks.storage.exceptions import InvalidCursorError
from jobhooks_tools.local.template import LocalResources
from jobhooks_tools.sample_events import demo_key, make_job_event, re_emit

from tests.fixtures.stack import ProvisionedStacks
from tests.integration.test_ingest import (
    NEW_KEY,
    Bridge,
    event_for,
    event_id_of,
    open_bridge,
    provisioned_stack,
)


@pytest.fixture(scope="module")
def ingest_stack(provisioned_stacks: ProvisionedStacks) -> Iterator[LocalResources]:
    with provisioned_stack(provisioned_stacks) as stack:
        yield stack


@pytest.fixture
def bridge(
    ingest_stack: LocalResources,
    provisioned_stacks: ProvisionedStacks,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Bridge]:
    with open_bridge(ingest_stack, provisioned_stacks, monkeypatch) as opened:
        yield opened


def management(bridge: Bridge) -> IngestService:
    """Built as the API function builds it: from the same settings as the ingest function."""
    return build_ingest_service(IngestSettings.from_env(), session=bridge.session)


def quarantine(bridge: Bridge) -> QuarantineStore:
    return QuarantineStore(bridge.quarantine_table, bridge.dynamodb, retention_seconds=30 * 86400)


# -------------------------------------------------------------------------- reading


def test_get_event_returns_the_done_record_with_its_payload(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    event = event_for()
    bridge.send(event)
    bridge.run()
    (task,) = bridge.take_deliveries()
    service = management(bridge)

    record = service.claims.get(event_id_of(event))

    assert record is not None
    assert record.state is ClaimState.DONE
    assert (record.tenant_id, record.event_type, record.matched) == ("acme", "job.completed", 1)
    assert record.payload == task.payload
    shown = record.to_dict(include_payload=False)
    assert shown["state"] == "done" and "payload" not in shown
    assert service.claims.get("fetcher.job.completed.nobody") is None


def test_unmatched_events_are_listed_newest_first_in_pages(bridge: Bridge) -> None:
    events = [event_for("initech") for _ in range(3)]
    for event in events:  # one at a time, so that their done_at differ
        bridge.send(event)
        bridge.run()
        time.sleep(0.002)
    bridge.send(event_for("acme"))
    bridge.run()
    service = management(bridge)

    first = service.claims.list_unmatched("initech", limit=2)
    assert first.next_cursor is not None
    second = service.claims.list_unmatched("initech", limit=2, cursor=first.next_cursor)

    listed = [record.event_id for record in first.events + second.events]
    assert listed == [event_id_of(event) for event in reversed(events)]
    assert second.next_cursor is None
    with pytest.raises(InvalidCursorError):
        service.claims.list_unmatched("acme", cursor=first.next_cursor)


# -------------------------------------------------------------------------- re-fan-out


def test_refan_out_delivers_an_unmatched_event_to_a_subscription_added_later(
    bridge: Bridge,
) -> None:
    event = event_for()
    bridge.send(event)
    bridge.run()
    service = management(bridge)
    assert [r.event_id for r in service.claims.list_unmatched("acme").events] == [
        event_id_of(event)
    ]
    # The hot path's subscription cache now says "acme has none"; an operator's re-fan-out
    # must not trust it.
    warm = event_for()
    service.ingest_record(InboundMessage(warm.forwarded().to_json(), "m", datetime.now(UTC)))
    late = bridge.subscribe("acme")

    result = service.refan_out(event_id_of(event))

    assert (result.deliveries, result.subscription_ids) == (1, (late.subscription_id,))
    (task,) = bridge.take_deliveries()
    assert (task.subscription_id, task.replay) == (late.subscription_id, False)
    assert task.event_id == event_id_of(event)
    assert task.payload == service.claims.get(event_id_of(event)).payload  # type: ignore[union-attr]
    still_unmatched = [r.event_id for r in service.claims.list_unmatched("acme").events]
    assert still_unmatched == [event_id_of(warm)]
    assert bridge.claim_item(event_id_of(event))["matched"] == "1"  # type: ignore[index]


def test_refan_out_with_replay_asks_for_a_new_post_under_the_same_ids(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    event = event_for()
    bridge.send(event)
    bridge.run()
    (original,) = bridge.take_deliveries()

    management(bridge).refan_out(event_id_of(event), replay=True)

    (again,) = bridge.take_deliveries()
    assert again.replay is True
    assert (again.delivery_id, again.webhook_id) == (original.delivery_id, original.webhook_id)


def test_refan_out_refuses_unknown_and_unfinished_events(bridge: Bridge) -> None:
    service = management(bridge)
    with pytest.raises(EventNotFoundError):
        service.refan_out("fetcher.job.completed.unknown")
    bridge.dynamodb.put_item(
        TableName=bridge.claims_table,
        Item={
            "event_id": {"S": "fetcher.job.completed.busy"},
            "state": {"S": "in_progress"},
            "claim_token": {"S": "t"},
            "lease_until": {"N": str(int(time.time() * 1000) + 60_000)},
            "expires_at": {"N": str(int(time.time()) + 86400)},
        },
    )
    with pytest.raises(EventInProgressError) as raised:
        service.refan_out("fetcher.job.completed.busy")
    assert raised.value.code == "event_in_progress"
    assert bridge.take_deliveries() == []


# -------------------------------------------------------------------------- replay


def test_replay_accepts_a_quarantined_message_once_its_key_is_configured(
    bridge: Bridge,
) -> None:
    bridge.subscribe("acme")
    event = make_job_event(NEW_KEY, tenant_id="acme")
    bridge.send(event)
    bridge.run()
    (kept,) = bridge.quarantined()
    assert kept["reason"] == "signature_mismatch"
    bridge.put_fetcher_keys(demo_key(), NEW_KEY)

    result = management(bridge).reingest(kept["quarantine_id"])

    assert (result.outcome, result.event_id, result.deliveries) == (
        IngestOutcome.ACCEPTED,
        event_id_of(event),
        1,
    )
    assert len(bridge.take_deliveries()) == 1
    replayed = quarantine(bridge).get(kept["quarantine_id"])
    assert replayed.status is QuarantineStatus.REPLAYED
    assert (replayed.replay_outcome, replayed.replayed_as) == ("accepted", None)
    assert replayed.replayed_at is not None


def test_replay_of_a_stale_message_is_rejected_unless_stale_is_allowed(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    event = event_for(timestamp=int(time.time()) - 8 * 86400)
    bridge.send(event)
    bridge.run()
    (kept,) = bridge.quarantined()
    service = management(bridge)

    again = service.reingest(kept["quarantine_id"])

    assert (again.outcome, again.reason) == (IngestOutcome.REJECTED, Reason.STALE_TIMESTAMP)
    assert again.quarantine_id not in (None, kept["quarantine_id"])
    store = quarantine(bridge)
    original = store.get(kept["quarantine_id"])
    assert (original.replay_outcome, original.replayed_as) == (
        "rejected:stale_timestamp",
        again.quarantine_id,
    )
    assert store.get(again.quarantine_id).replay_of == kept["quarantine_id"]  # type: ignore[arg-type]
    assert bridge.take_deliveries() == []

    forced = service.reingest(kept["quarantine_id"], allow_stale=True)

    assert (forced.outcome, forced.deliveries) == (IngestOutcome.ACCEPTED, 1)
    assert len(bridge.take_deliveries()) == 1


def test_replay_of_an_event_delivered_meanwhile_is_a_duplicate(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    rejected = make_job_event(NEW_KEY, tenant_id="acme", timestamp=int(time.time()) - 60)
    bridge.send(rejected)
    bridge.run()
    (kept,) = bridge.quarantined()
    # The producer's repairer re-emits the same ce-id under the configured key.
    bridge.send(re_emit(rejected, demo_key(), timestamp=int(time.time())))
    bridge.run()
    assert len(bridge.take_deliveries()) == 1
    bridge.put_fetcher_keys(demo_key(), NEW_KEY)

    result = management(bridge).reingest(kept["quarantine_id"])

    assert (result.outcome, result.event_id) == (IngestOutcome.DUPLICATE, event_id_of(rejected))
    assert bridge.take_deliveries() == []


def test_replay_of_an_unknown_quarantine_id_says_so(bridge: Bridge) -> None:
    with pytest.raises(QuarantinedMessageNotFoundError) as raised:
        management(bridge).reingest("q_0000")
    assert raised.value.as_dict()["error"] == "quarantined_message_not_found"


def test_quarantine_lists_by_reason_newest_first_in_pages(bridge: Bridge) -> None:
    bridge.send("not json 1")
    bridge.run()
    time.sleep(0.002)
    bridge.send("not json 2", make_job_event(NEW_KEY))
    bridge.run()
    store = quarantine(bridge)

    first = store.list_messages(reason=Reason.MALFORMED_ENVELOPE, limit=1)
    assert first.next_cursor is not None
    second = store.list_messages(
        reason=Reason.MALFORMED_ENVELOPE, limit=1, cursor=first.next_cursor
    )

    assert [m.message for m in first.messages + second.messages] == ["not json 2", "not json 1"]
    assert second.next_cursor is None
    everything = store.list_messages()
    assert sorted(m.reason.value for m in everything.messages) == [
        "malformed_envelope",
        "malformed_envelope",
        "signature_mismatch",
    ]
    with pytest.raises(InvalidCursorError):
        store.list_messages(cursor=first.next_cursor)
