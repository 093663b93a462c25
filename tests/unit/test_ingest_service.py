"""The ingest use case with in-memory stores: what happens in which order, and what is never done.

The DynamoDB and SQS adapters have their own tests against moto (tests/integration); here the
ports are fakes that write a journal, so the order of side effects is the specification.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from jobhooks.delivery_queue import DeliveryEnqueueError
from jobhooks.delivery_task import DeliveryTask
from jobhooks.frozen_record import replace
from jobhooks.inbound.event import JobEvent
from jobhooks.inbound.job_events import VerificationPolicy
from jobhooks.inbound.keys import HmacKey
from jobhooks.inbound.rejection import Reason, RejectedMessageError
from jobhooks.ingest.busy_records import BusyRecords
from jobhooks.ingest.exceptions import ClaimInProgressError, ClaimLostError
from jobhooks.ingest.fetcher_keys import StaticKeys
from jobhooks.ingest.inbound import InboundMessage
from jobhooks.ingest.model import (
    Claim,
    ClaimState,
    Duplicate,
    EventPage,
    EventRecord,
    FanOutPlan,
    IngestOutcome,
    QuarantinedMessage,
)
from jobhooks.ingest.quarantine import quarantine_id_for
from jobhooks.ingest.service import IngestService
from jobhooks.subscriptions import EventType, Subscription
from jobhooks_tools.sample_events import SampleEvent, demo_key, make_job_event

NOW = datetime(2026, 7, 13, 18, 4, 12, tzinfo=UTC)
T = int(NOW.timestamp()) - 1
OTHER_KEY = HmacKey(bytes.fromhex("33" * 32))


class Crash(BaseException):
    pass


@dataclass
class Journal:
    entries: list[str] = field(default_factory=list)

    def __call__(self, entry: str) -> None:
        self.entries.append(entry)


@dataclass
class FakeClaims:
    journal: Journal
    items: dict[str, EventRecord] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    fail_complete: Exception | None = None

    def claim_event(
        self, event: JobEvent, *, lease_ms: int, plan: FanOutPlan | None = None
    ) -> Claim | Duplicate:
        self.journal(f"claim lease={lease_ms}")
        existing = self.items.get(event.event_id)
        if existing is not None and existing.expires_at > NOW:
            if existing.state is ClaimState.DONE:
                return Duplicate(existing)
            raise ClaimInProgressError(event.event_id, existing.lease_until_ms or 0)
        token = secrets.token_hex(4)
        self.tokens[event.event_id] = token
        self.items[event.event_id] = EventRecord(
            event_id=event.event_id,
            state=ClaimState.IN_PROGRESS,
            tenant_id=event.tenant_id,
            event_type=event.event_type,
            job_id=event.job_id,
            claimed_at=NOW,
            expires_at=NOW + timedelta(days=7),
            lease_until_ms=lease_ms,
        )
        return Claim(
            event.event_id, event.tenant_id, event.event_type, event.job_id, token, lease_ms
        )

    def complete(
        self,
        claim: Claim,
        *,
        matched: int,
        payload: str,
        subscription_ids: Iterable[str] = (),
    ) -> EventRecord:
        self.journal(f"complete matched={matched}")
        if self.fail_complete is not None:
            raise self.fail_complete
        record = replace(
            self.items[claim.event_id],
            state=ClaimState.DONE,
            matched=matched,
            payload=payload,
            unmatched=matched == 0,
            subscription_ids=tuple(sorted(subscription_ids)),
        )
        self.items[claim.event_id] = record
        return record

    def complete_batch(
        self, batch_id: str, claimed: Sequence[tuple[Claim, FanOutPlan]]
    ) -> list[EventRecord]:
        # One write for the batch in the real store: a failure fails every claim of it.
        return [
            self.complete(
                claim,
                matched=plan.matched,
                payload=plan.payload,
                subscription_ids=plan.subscription_ids,
            )
            for claim, plan in claimed
        ]

    def release(self, claim: Claim) -> bool:
        self.journal("release")
        if self.tokens.get(claim.event_id) != claim.token:
            return False
        del self.items[claim.event_id]
        return True

    def get(self, event_id: str) -> EventRecord | None:
        return self.items.get(event_id)

    def get_done(self, event_id: str) -> EventRecord:
        raise NotImplementedError

    def list_unmatched(
        self, tenant_id: str, *, limit: int = 50, cursor: str | None = None
    ) -> EventPage:
        raise NotImplementedError

    def record_fan_out(
        self, record: EventRecord, *, matched: int, subscription_ids: Iterable[str] = ()
    ) -> EventRecord:
        raise NotImplementedError


@dataclass
class FakeQuarantine:
    journal: Journal
    kept: list[QuarantinedMessage] = field(default_factory=list)
    fail: Exception | None = None

    def quarantine_message(
        self, message: InboundMessage, rejection: RejectedMessageError
    ) -> QuarantinedMessage:
        self.journal(f"quarantine {rejection.reason.value}")
        if self.fail is not None:
            raise self.fail
        record = QuarantinedMessage(
            quarantine_id=quarantine_id_for(message.message_id, message.sent_at),
            reason=rejection.reason,
            detail=rejection.detail,
            message=message.body,
            sqs_message_id=message.message_id,
            sent_at=message.sent_at,
            received_at=NOW,
            expires_at=NOW + timedelta(days=30),
        )
        self.kept.append(record)
        return record

    def get(self, quarantine_id: str) -> QuarantinedMessage:
        raise NotImplementedError

    def mark_replayed(
        self, quarantine_id: str, *, outcome: str, replayed_as: str | None = None
    ) -> None:
        raise NotImplementedError


@dataclass
class FakeDeliveries:
    journal: Journal
    sent: list[DeliveryTask] = field(default_factory=list)
    fail: BaseException | None = None

    def enqueue(self, event_id: str, tasks: Sequence[DeliveryTask]) -> int:
        self.journal(f"enqueue {len(tasks)}")
        if self.fail is not None:
            raise self.fail
        self.sent.extend(tasks)
        return len(tasks)

    def enqueue_events(
        self, events: Sequence[tuple[str, Sequence[DeliveryTask]]]
    ) -> dict[str, Exception]:
        failed: dict[str, Exception] = {}
        for event_id, tasks in events:
            try:
                self.enqueue(event_id, tasks)
            except Exception as error:
                failed[event_id] = error
        return failed


@dataclass
class FakeSubscriptions:
    subscriptions: list[Subscription] = field(default_factory=list)

    def matching(self, tenant_id: str, event_type: str) -> Sequence[Subscription]:
        return [s for s in self.subscriptions if s.wants(tenant_id, event_type)]


class RotatingKeys:
    """A secret that gained a key since the cached read."""

    def __init__(self) -> None:
        self.current: tuple[HmacKey, ...] = (demo_key(),)
        self.refreshes = 0

    def keys(self) -> tuple[HmacKey, ...]:
        return self.current

    def refresh(self) -> bool:
        self.refreshes += 1
        self.current = (demo_key(), OTHER_KEY)
        return True


def subscription(tenant_id: str = "acme", n: int = 1) -> Subscription:
    return Subscription(
        subscription_id=f"sub_{tenant_id}_{n}",
        tenant_id=tenant_id,
        url="https://example.com/hook",
        event_types=(EventType.JOB_COMPLETED, EventType.JOB_FAILED),
        created_at=NOW,
        updated_at=NOW,
        data_key=b"",
    )


@dataclass
class World:
    journal: Journal
    claims: FakeClaims
    quarantine: FakeQuarantine
    deliveries: FakeDeliveries
    subscriptions: FakeSubscriptions
    service: IngestService


@pytest.fixture
def world() -> World:
    journal = Journal()
    claims, quarantine = FakeClaims(journal), FakeQuarantine(journal)
    deliveries, subscriptions = FakeDeliveries(journal), FakeSubscriptions([subscription()])
    service = IngestService(
        claims=claims,
        quarantine=quarantine,
        subscriptions=subscriptions,
        deliveries=deliveries,
        keys=StaticKeys((demo_key(),)),
        policy=VerificationPolicy(keys=()),
        max_lease_ms=60_000,
        clock=lambda: NOW,
    )
    return World(journal, claims, quarantine, deliveries, subscriptions, service)


def message(event: SampleEvent | str, message_id: str = "m-1") -> InboundMessage:
    body = event if isinstance(event, str) else event.forwarded().to_json()
    return InboundMessage(body=body, message_id=message_id, sent_at=NOW)


def signed(**options: object) -> SampleEvent:
    options.setdefault("tenant_id", "acme")
    options.setdefault("timestamp", T)
    return make_job_event(demo_key(), **options)  # type: ignore[arg-type]


def test_accepts_by_claiming_enqueueing_then_completing(world: World) -> None:
    result = world.service.ingest_record(message(signed()), remaining_ms=25_000)

    assert (result.outcome, result.deliveries) == (IngestOutcome.ACCEPTED, 1)
    assert world.journal.entries == ["claim lease=25000", "enqueue 1", "complete matched=1"]
    (task,) = world.deliveries.sent
    assert task.payload == world.claims.items[task.event_id].payload


def test_the_lease_is_the_remaining_time_bounded_by_the_maximum(world: World) -> None:
    world.service.ingest_record(message(signed()), remaining_ms=900_000)
    world.service.ingest_record(message(signed()))  # no invocation: a replay from the API

    assert world.journal.entries[0::3] == ["claim lease=60000", "claim lease=60000"]


def test_an_event_nothing_matches_is_completed_as_unmatched_without_enqueueing(
    world: World,
) -> None:
    result = world.service.ingest_record(message(signed(tenant_id="initech")))

    assert (result.outcome, result.deliveries) == (IngestOutcome.ACCEPTED, 0)
    assert world.journal.entries == ["claim lease=60000", "complete matched=0"]
    assert world.claims.items[result.event_id].unmatched  # type: ignore[index]


def test_a_duplicate_of_a_done_event_has_no_side_effect(world: World) -> None:
    event = signed()
    world.service.ingest_record(message(event))
    world.journal.entries.clear()

    result = world.service.ingest_record(message(event, "m-2"))

    assert result.outcome is IngestOutcome.DUPLICATE
    assert world.journal.entries == ["claim lease=60000"]
    assert len(world.deliveries.sent) == 1


def test_a_claim_held_elsewhere_fails_the_record(world: World) -> None:
    event = signed(job_id="job-1")
    world.claims.items["fetcher.job.completed.job-1"] = EventRecord(
        event_id="fetcher.job.completed.job-1",
        state=ClaimState.IN_PROGRESS,
        tenant_id="acme",
        event_type="job.completed",
        job_id="job-1",
        claimed_at=NOW,
        expires_at=NOW + timedelta(days=7),
        lease_until_ms=int(NOW.timestamp() * 1000) + 30_000,
    )

    with pytest.raises(ClaimInProgressError) as raised:
        world.service.ingest_record(message(event))

    assert raised.value.code == "claim_in_progress"
    assert world.deliveries.sent == []


def test_a_failed_fan_out_releases_the_claim_and_never_completes(world: World) -> None:
    world.deliveries.fail = DeliveryEnqueueError("e", 1, 1, "InternalError")

    with pytest.raises(DeliveryEnqueueError):
        world.service.ingest_record(message(signed()))

    assert world.journal.entries == ["claim lease=60000", "enqueue 1", "release"]
    assert world.claims.items == {}


def test_a_failed_completion_releases_the_claim(world: World) -> None:
    world.claims.fail_complete = RuntimeError("DynamoDB is down")

    with pytest.raises(RuntimeError):
        world.service.ingest_record(message(signed()))

    assert world.journal.entries[-1] == "release"


def test_a_lost_claim_is_not_released(world: World) -> None:
    world.claims.fail_complete = ClaimLostError("e")

    with pytest.raises(ClaimLostError):
        world.service.ingest_record(message(signed()))

    assert "release" not in world.journal.entries


def test_a_crash_leaves_the_claim_to_its_lease(world: World) -> None:
    world.deliveries.fail = Crash()

    with pytest.raises(Crash):
        world.service.ingest_record(message(signed()))

    assert world.journal.entries == ["claim lease=60000", "enqueue 1"]
    (held,) = world.claims.items.values()
    assert held.state is ClaimState.IN_PROGRESS


def test_a_rejected_message_is_quarantined_and_never_claimed(world: World) -> None:
    result = world.service.ingest_record(message("not json", "m-9"))

    assert (result.outcome, result.reason) == (
        IngestOutcome.REJECTED,
        Reason.MALFORMED_ENVELOPE,
    )
    assert result.quarantine_id == quarantine_id_for("m-9", NOW)
    assert result.summary == "rejected:malformed_envelope"
    assert world.journal.entries == ["quarantine malformed_envelope"]


def test_a_failed_quarantine_write_fails_the_record(world: World) -> None:
    world.quarantine.fail = RuntimeError("DynamoDB is down")

    with pytest.raises(RuntimeError):
        world.service.ingest_record(message("not json"))


def test_allow_stale_lifts_only_the_stale_rule(world: World) -> None:
    stale = signed(timestamp=T - 8 * 86400)
    future = signed(timestamp=T + 3600)

    assert world.service.ingest_record(message(stale)).reason is Reason.STALE_TIMESTAMP
    assert world.service.ingest_record(message(stale), allow_stale=True).outcome is (
        IngestOutcome.ACCEPTED
    )
    rejected = world.service.ingest_record(message(future), allow_stale=True)
    assert rejected.reason is Reason.FUTURE_TIMESTAMP


def test_each_read_takes_the_stale_switch_and_the_keys_of_its_own_call(world: World) -> None:
    # The policy built for one read is reused by the next only when nothing it was built from
    # changed: the switch of a replay, or the keys, must never leak into the following read.
    stale = signed(timestamp=T - 8 * 86400)
    assert world.service.ingest_record(message(stale), allow_stale=True).outcome is (
        IngestOutcome.ACCEPTED
    )
    later_copy = signed(timestamp=T - 8 * 86400)
    assert world.service.ingest_record(message(later_copy)).reason is Reason.STALE_TIMESTAMP

    assert world.service.ingest_record(message(signed())).outcome is IngestOutcome.ACCEPTED
    world.service.keys = StaticKeys((OTHER_KEY,))
    by_old_key = signed()
    assert world.service.ingest_record(message(by_old_key)).reason is Reason.SIGNATURE_MISMATCH
    by_new_key = make_job_event(OTHER_KEY, tenant_id="acme", timestamp=T)
    assert world.service.ingest_record(message(by_new_key)).outcome is IngestOutcome.ACCEPTED


def test_a_signature_mismatch_re_reads_the_keys_once_before_quarantining(
    world: World,
) -> None:
    keys = RotatingKeys()
    world.service.keys = keys
    by_new_key = make_job_event(OTHER_KEY, tenant_id="acme", timestamp=T)

    result = world.service.ingest_record(message(by_new_key))

    assert result.outcome is IngestOutcome.ACCEPTED
    assert keys.refreshes == 1
    unknown = make_job_event(HmacKey(bytes(32)), tenant_id="acme", timestamp=T)
    assert world.service.ingest_record(message(unknown)).reason is Reason.SIGNATURE_MISMATCH


def test_a_duplicate_claimed_by_another_tenant_is_logged_as_an_error(
    world: World, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Listen on the ingest logger itself: other tests in the session (Powertools loggers, the
    # shovel's and the local stack's log routing) may change what reaches the root logger.
    ingest_logger = logging.getLogger("jobhooks.ingest")
    monkeypatch.setattr(ingest_logger, "handlers", [*ingest_logger.handlers, caplog.handler])
    monkeypatch.setattr(ingest_logger, "propagate", False)
    world.subscriptions.subscriptions.append(subscription("globex"))
    world.service.ingest_record(message(signed(job_id="same-job", tenant_id="acme")))

    with caplog.at_level("INFO", logger="jobhooks.ingest"):
        result = world.service.ingest_record(message(signed(job_id="same-job", tenant_id="globex")))

    assert result.outcome is IngestOutcome.DUPLICATE
    (error,) = [r for r in caplog.records if r.levelname == "ERROR"]
    assert (error.tenant_id, error.ingested_for_tenant) == ("globex", "acme")  # type: ignore[attr-defined]
    assert [task.tenant_id for task in world.deliveries.sent] == ["acme"]


class RecordingSqs:
    def __init__(self, error: Exception | None = None) -> None:
        self.calls: list[dict[str, object]] = []
        self.error = error

    def change_message_visibility(self, **request: object) -> None:
        self.calls.append(request)
        if self.error is not None:
            raise self.error


def test_a_record_whose_claim_is_busy_comes_back_when_the_lease_ends(world: World) -> None:
    sqs = RecordingSqs()
    world.service.busy_records = BusyRecords("queue-url", sqs, clock=lambda: NOW)
    event = signed(job_id="busy-job")
    world.service.ingest_record(message(event))
    record = world.claims.items["fetcher.job.completed.busy-job"]
    lease_until_ms = int(NOW.timestamp() * 1000) + 12_300
    world.claims.items[record.event_id] = replace(
        record, state=ClaimState.IN_PROGRESS, lease_until_ms=lease_until_ms
    )

    copy = replace(message(event, "m-2"), receipt_handle="rh-2")
    with pytest.raises(ClaimInProgressError):
        world.service.ingest_record(copy)

    # 12.3 s of lease left: visible again one second after it ends, not after 240 s.
    assert sqs.calls == [
        {"QueueUrl": "queue-url", "ReceiptHandle": "rh-2", "VisibilityTimeout": 14}
    ]


def test_a_failed_visibility_change_still_leaves_the_record_for_retry() -> None:
    from botocore.exceptions import EndpointConnectionError

    sqs = RecordingSqs(EndpointConnectionError(endpoint_url="http://127.0.0.1:9"))
    busy = BusyRecords("queue-url", sqs, clock=lambda: NOW)
    assert busy.retry_after_lease("rh", int(NOW.timestamp() * 1000) + 5_000) is None
    assert len(sqs.calls) == 1
