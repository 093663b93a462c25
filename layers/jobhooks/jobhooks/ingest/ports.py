"""What the ingest use case needs from storage and queues, as small interfaces.

They speak the model's types (`model`), never an adapter's: `claims.ClaimStore`,
`quarantine.QuarantineStore`, `fan_out.DeliveryQueue`, `busy_records.BusyRecords` and the
subscription store are the DynamoDB and SQS adapters,
`jobhooks.analytics.recorder.AnalyticsRecorder` writes the analytics rows, the delivery
package's first-attempt stage (`jobhooks.delivery.first_attempt.FirstAttemptStage`) makes the
first attempts, and `jobhooks.spill.queue.SpillQueue` keeps what could not be written after
the webhooks; tests may pass in-memory fakes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from jobhooks.analytics.row import AnalyticsRow
from jobhooks.delivery.first_attempt import EventDeliveries, FirstAttemptReport, PageSpill
from jobhooks.inbound.event import JobEvent
from jobhooks.inbound.outcome import OutcomeData
from jobhooks.inbound.rejection import RejectedMessageError
from jobhooks.ingest.inbound import InboundMessage
from jobhooks.ingest.model import (
    Claim,
    Duplicate,
    EventRecord,
    FanOutPlan,
)
from jobhooks.queued_task import QueuedTask
from jobhooks.subscriptions.model import Subscription

if TYPE_CHECKING:
    from jobhooks.ingest.quarantined import QuarantinedMessage
    from jobhooks.ingest.reads import EventPage

    # The spill path runs only when a write after the webhooks failed: not at import.
    from jobhooks.spill.messages import SpillMessage


class EventClaims(Protocol):
    def claim_event(
        self, event: JobEvent, *, lease_ms: int, plan: FanOutPlan | None = None
    ) -> Claim | Duplicate: ...

    def complete_batch(
        self, batch_id: str, claimed: Sequence[tuple[Claim, FanOutPlan]]
    ) -> list[EventRecord]: ...

    def release(self, claim: Claim) -> bool: ...

    def get(self, event_id: str) -> EventRecord | None: ...

    def get_done(self, event_id: str) -> EventRecord: ...

    def list_unmatched(
        self, tenant_id: str, *, limit: int = ..., cursor: str | None = None
    ) -> EventPage: ...

    def record_fan_out(
        self, record: EventRecord, *, matched: int, subscription_ids: Iterable[str] = ()
    ) -> EventRecord: ...


class Quarantine(Protocol):
    def quarantine_message(
        self, message: InboundMessage, rejection: RejectedMessageError
    ) -> QuarantinedMessage: ...

    def get(self, quarantine_id: str) -> QuarantinedMessage: ...

    def mark_replayed(
        self, quarantine_id: str, *, outcome: str, replayed_as: str | None = None
    ) -> None: ...


class SubscriptionMatcher(Protocol):
    def matching(self, tenant_id: str, event_type: str) -> Sequence[Subscription]: ...


class DeliveryTasks(Protocol):
    def enqueue(self, event_id: str, tasks: Sequence[QueuedTask]) -> int: ...

    def enqueue_events(
        self, events: Sequence[tuple[str, Sequence[QueuedTask]]]
    ) -> Mapping[str, Exception]:
        """Send several events' tasks together; the error of each event not fully accepted."""


class FirstAttempts(Protocol):
    """Makes the first attempt of the claimed events' deliveries and settles each (records,
    pages, a 410's disable); says, per event, what is left to enqueue."""

    def deliver_first(
        self,
        events: Sequence[EventDeliveries],
        *,
        remaining_ms: int | None = None,
        spill_pages: PageSpill | None = None,
    ) -> FirstAttemptReport: ...


class BusyRecordRetry(Protocol):
    """Brings back a record whose claim is busy when the claim's lease ends (best effort)."""

    def retry_after_lease(self, receipt_handle: str, lease_until_ms: int) -> int | None: ...


class OutcomeRecorder(Protocol):
    def record(self, outcomes: Sequence[OutcomeData]) -> None:
        """One analytics row per outcome; raises `AnalyticsError` when they were not written."""

    def rows_for(
        self, outcomes: Sequence[OutcomeData], *, pseudonymize: bool = True
    ) -> list[AnalyticsRow]:
        """The rows `record` writes (raw ids with `pseudonymize` False), for the spill path."""


class Spill(Protocol):
    """Where ingest keeps writes that failed after the webhooks (`jobhooks.spill`)."""

    def spill(self, spilled: SpillMessage) -> int:
        """Send them for the spill function to write; raises when they were not taken."""
