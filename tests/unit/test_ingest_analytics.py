"""The analytics row of the ingest use case: when it is written, when it is not, and what a sink
that fails does to the record and its webhooks (docs/analytics.md, "When a row cannot be
written"): with a spill queue (the ingest function) the row is spilled and the event completes;
without one (the management API's replays) the record is retried.

The stores are the journal-writing fakes of test_ingest_service.py; the recorder is the real
`AnalyticsRecorder` over a sink that writes to the same journal, so the order of side effects
is the specification.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from jobhooks.analytics.exceptions import AnalyticsWriteError, PseudonymizationKeyError
from jobhooks.analytics.recorder import AnalyticsRecorder
from jobhooks.analytics.row import AnalyticsRow, row_from_outcome
from jobhooks.analytics.sink import AnalyticsSink
from jobhooks.inbound.job_events import VerificationPolicy, read_forwarded_message
from jobhooks.inbound.outcome import outcome_data, webhook_payload
from jobhooks.ingest.fetcher_keys import StaticKeys
from jobhooks.ingest.model import ClaimState, EventRecord, IngestOutcome, QuarantinedMessage
from jobhooks.ingest.service import IngestService
from jobhooks.ingest.telemetry import IngestTelemetry
from jobhooks.spill.exceptions import SpillRefusedError
from jobhooks.spill.messages import SpilledRows, SpillMessage
from jobhooks_tools.sample_events import demo_key, make_job_event

from tests.unit.test_ingest_service import (
    NOW,
    OTHER_KEY,
    FakeClaims,
    FakeDeliveries,
    FakeQuarantine,
    FakeSubscriptions,
    Journal,
    T,
    message,
    signed,
    subscription,
)


@dataclass
class JournalSink(AnalyticsSink):
    """Writes rows to the journal; fails the next `fail_times` calls as Firehose would."""

    journal: Journal
    rows: list[AnalyticsRow] = field(default_factory=list)
    fail_times: int = 0

    def put_rows(self, rows: Sequence[AnalyticsRow]) -> None:
        self.journal(f"row {rows[0].status}" if len(rows) == 1 else f"rows {len(rows)}")
        if self.fail_times:
            self.fail_times -= 1
            raise AnalyticsWriteError(len(rows), len(rows), "ServiceUnavailableException")
        self.rows.extend(rows)


class DoneClaims(FakeClaims):
    """Claims whose done records can be read back, as the management paths need."""

    def get_done(self, event_id: str) -> EventRecord:
        record = self.items[event_id]
        assert record.state is ClaimState.DONE
        return record

    def record_fan_out(
        self, record: EventRecord, *, matched: int, subscription_ids: object = ()
    ) -> EventRecord:
        self.journal(f"record fan-out matched={matched}")
        return record


class ReplayableQuarantine(FakeQuarantine):
    def get(self, quarantine_id: str) -> QuarantinedMessage:
        return next(kept for kept in self.kept if kept.quarantine_id == quarantine_id)

    def mark_replayed(
        self, quarantine_id: str, *, outcome: str, replayed_as: str | None = None
    ) -> None:
        self.journal(f"mark replayed {outcome}")


@dataclass
class JournalSpill:
    """The spill queue: keeps what it is given, or refuses the next `refuse_times` calls."""

    journal: Journal
    spilled: list[SpillMessage] = field(default_factory=list)
    refuse_times: int = 0

    def spill(self, spilled: SpillMessage) -> int:
        kind = "rows" if isinstance(spilled, SpilledRows) else "pages"
        self.journal(f"spill {kind}")
        if self.refuse_times:
            self.refuse_times -= 1
            raise SpillRefusedError(kind, "ServiceUnavailable")
        self.spilled.append(spilled)
        return 1


class UnreadableKey:
    """A pseudonymizer whose key Secrets Manager will not give."""

    def pseudonym(self, column: str, value: str) -> str:
        raise PseudonymizationKeyError("GetSecretValue on the key's secret failed: Throttling")


@dataclass
class World:
    journal: Journal
    claims: DoneClaims
    quarantine: ReplayableQuarantine
    deliveries: FakeDeliveries
    subscriptions: FakeSubscriptions
    sink: JournalSink
    service: IngestService


@pytest.fixture
def world() -> World:
    journal = Journal()
    claims, quarantine = DoneClaims(journal), ReplayableQuarantine(journal)
    deliveries, subscriptions = FakeDeliveries(journal), FakeSubscriptions([subscription()])
    sink = JournalSink(journal)
    service = IngestService(
        claims=claims,
        quarantine=quarantine,
        subscriptions=subscriptions,
        deliveries=deliveries,
        keys=StaticKeys((demo_key(),)),
        policy=VerificationPolicy(keys=()),
        max_lease_ms=60_000,
        clock=lambda: NOW,
        analytics=AnalyticsRecorder(sink),
        telemetry=IngestTelemetry(logging.getLogger("tests.ingest")),
    )
    return World(journal, claims, quarantine, deliveries, subscriptions, sink, service)


def test_the_row_is_written_after_the_deliveries_are_enqueued_and_before_completion(
    world: World,
) -> None:
    event = signed()
    world.service.ingest_record(message(event))

    assert world.journal.entries == [
        "claim lease=60000",
        "enqueue 1",
        "row success",
        "complete matched=1",
    ]
    # The row is the webhook's outcome, and the webhook's bytes did not change for it.
    verified = read_forwarded_message(
        event.forwarded().to_json(), VerificationPolicy(keys=(demo_key(),)), NOW
    )
    (task,) = world.deliveries.sent
    assert task.payload == webhook_payload(verified)
    assert world.sink.rows == [row_from_outcome(outcome_data(verified))]


def test_an_event_no_subscription_wanted_is_still_a_row(world: World) -> None:
    result = world.service.ingest_record(message(signed(tenant_id="initech", status="failed")))

    assert (result.outcome, result.deliveries) == (IngestOutcome.ACCEPTED, 0)
    assert world.journal.entries == ["claim lease=60000", "row failure", "complete matched=0"]
    (row,) = world.sink.rows
    assert (row.account_id, row.status) == ("initech", "failure")


def test_a_duplicate_writes_no_second_row(world: World) -> None:
    event = signed()
    world.service.ingest_record(message(event))
    world.service.ingest_record(message(event, "m-2"))

    assert len(world.sink.rows) == 1
    assert world.journal.entries.count("row success") == 1


def test_a_rejected_message_is_no_row(world: World) -> None:
    forged = signed().with_headers(X_Tenant_ID="globex")
    result = world.service.ingest_record(message(forged))

    assert result.outcome is IngestOutcome.REJECTED
    assert world.sink.rows == []


def test_a_failing_sink_neither_loses_the_row_nor_blocks_or_duplicates_the_webhooks(
    world: World,
) -> None:
    world.sink.fail_times = 1
    event = signed()

    with pytest.raises(AnalyticsWriteError) as failed:
        world.service.ingest_record(message(event))

    # The webhooks were on their way before the row; the claim is released for the retry.
    assert failed.value.code == "analytics_write_failed"
    assert world.journal.entries == ["claim lease=60000", "enqueue 1", "row success", "release"]
    assert world.claims.items == {} and world.sink.rows == []
    (first,) = world.deliveries.sent

    # SQS delivers the record again: the row is written then, and the delivery task sent again
    # is the same delivery (same id, same bytes), which deliver skips once it succeeded.
    world.journal.entries.clear()
    retried = world.service.ingest_record(message(event))

    assert retried.outcome is IngestOutcome.ACCEPTED
    assert world.journal.entries == [
        "claim lease=60000",
        "enqueue 1",
        "row success",
        "complete matched=1",
    ]
    assert len(world.sink.rows) == 1
    first_again, second = world.deliveries.sent
    assert first_again == first
    assert (second.delivery_id, second.webhook_id, second.payload) == (
        first.delivery_id,
        first.webhook_id,
        first.payload,
    )


@pytest.fixture
def spilling(world: World) -> JournalSpill:
    """The world as the ingest function is wired: with a spill queue."""
    spill = JournalSpill(world.journal)
    world.service.spill = spill
    return spill


def test_a_failing_sink_spills_the_row_and_completes_the_event_so_no_webhook_goes_again(
    world: World, spilling: JournalSpill, caplog: pytest.LogCaptureFixture
) -> None:
    world.sink.fail_times = 1
    event = signed()

    with caplog.at_level(logging.WARNING, logger="tests.ingest"):
        result = world.service.ingest_record(message(event))

    # Acknowledged: SQS never delivers the record again, so its webhooks are not sent again.
    assert result.outcome is IngestOutcome.ACCEPTED
    assert world.journal.entries == [
        "claim lease=60000",
        "enqueue 1",
        "row success",
        "spill rows",
        "complete matched=1",
    ]
    assert world.sink.rows == []
    (spilled,) = spilling.spilled
    verified = read_forwarded_message(
        event.forwarded().to_json(), VerificationPolicy(keys=(demo_key(),)), NOW
    )
    assert spilled == SpilledRows((row_from_outcome(outcome_data(verified)),), pseudonymized=True)
    # A warning that says where the row went, not an error about a retry.
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("spilled for the spill function" in r.getMessage() for r in caplog.records)


def test_rows_whose_key_cannot_be_read_are_spilled_raw_for_the_spill_function_to_pseudonymize(
    world: World, spilling: JournalSpill
) -> None:
    world.service.analytics = AnalyticsRecorder(world.sink, pseudonymizer=UnreadableKey())

    result = world.service.ingest_record(message(signed(job_id="job-3")))

    assert result.outcome is IngestOutcome.ACCEPTED
    (spilled,) = spilling.spilled
    assert isinstance(spilled, SpilledRows) and spilled.pseudonymized is False
    assert [row.job_id for row in spilled.rows] == ["job-3"]
    assert world.sink.rows == []  # never written with raw ids


def test_when_the_spill_queue_refuses_too_the_event_retries_as_without_one(
    world: World, spilling: JournalSpill, caplog: pytest.LogCaptureFixture
) -> None:
    world.sink.fail_times = 1
    spilling.refuse_times = 1
    event = signed()

    with (
        caplog.at_level(logging.WARNING, logger="tests.ingest"),
        pytest.raises(AnalyticsWriteError),
    ):
        world.service.ingest_record(message(event))

    assert world.journal.entries[-2:] == ["spill rows", "release"]
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("spill queue refused them" in text for text in errors)

    world.journal.entries.clear()
    assert world.service.ingest_record(message(event)).outcome is IngestOutcome.ACCEPTED
    assert len(world.sink.rows) == 1 and spilling.spilled == []


def test_a_failed_write_is_logged_as_an_error_with_its_code(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.sink.fail_times = 1
    event = signed(job_id="job-7")

    with (
        caplog.at_level(logging.WARNING, logger="tests.ingest"),
        pytest.raises(AnalyticsWriteError),
    ):
        world.service.ingest_record(message(event))

    (error,) = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert "analytics row was not written" in error.getMessage()
    assert error.event_id == "fetcher.job.completed.job-7"  # type: ignore[attr-defined]
    assert error.code == "analytics_write_failed"  # type: ignore[attr-defined]


def test_a_re_fan_out_writes_no_row(world: World) -> None:
    event_id = world.service.ingest_record(message(signed())).event_id
    assert event_id is not None
    world.journal.entries.clear()

    world.service.refan_out(event_id)

    assert world.journal.entries == ["enqueue 1", "record fan-out matched=1"]
    assert len(world.sink.rows) == 1


def test_a_replayed_quarantined_message_that_is_accepted_is_a_row(world: World) -> None:
    # Signed with a key the bridge learns later: quarantined first, accepted on replay.
    unknown = make_job_event(OTHER_KEY, tenant_id="acme", timestamp=T, job_id="job-9")
    rejected = world.service.ingest_record(message(unknown))
    assert rejected.outcome is IngestOutcome.REJECTED and world.sink.rows == []
    world.service.keys = StaticKeys((demo_key(), OTHER_KEY))

    replayed = world.service.reingest(rejected.quarantine_id or "")

    assert replayed.outcome is IngestOutcome.ACCEPTED
    (row,) = world.sink.rows
    assert row.job_id == "job-9"
