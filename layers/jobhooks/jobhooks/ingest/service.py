"""The ingest use case: forwarded messages in, their deliveries enqueued (or rejections kept).

`IngestService.ingest_messages` takes an invocation's messages and reads in the order an event
flows:

1. verify and read each message (`jobhooks.inbound.job_events`); a rejection is quarantined,
   counted and acknowledged;
2. build its webhook payload once and match the tenant's subscriptions (cached), then claim its
   `ce-id` with a lease (`claims`), the claim carrying that fan-out and the id of the
   invocation's completion record; a duplicate of a done event is acknowledged with no side
   effect, one still in progress elsewhere is retried later;
3. with first attempts on (the ingest function's wiring), hand every claimed event's tasks to
   the delivery package's first-attempt stage (`jobhooks.delivery.first_attempt`), which POSTs
   them now and settles each (records, pages, a 410's disable) and gives back, per event, the
   tasks still to enqueue;
4. enqueue the delivery tasks still to deliver (all of them without first attempts) of every
   claimed event together (`fan_out`: 10 a call): a failed first attempt's task with
   `attempts_made=1`, hidden until the retry schedule's attempt 2;
5. write their analytics rows in one sink call (`jobhooks.analytics`): the webhooks' outcomes,
   whether or not a subscription wanted them;
6. write the completion record that lists the events done: one write for the batch instead of
   an update per claim (docs/cost.md).

A message's result is returned only when it may be acknowledged. An event that fails after
step 2 has its claim released (conditional on its token) and its error returned, so the retry
starts over at once; the other events go on. A crash leaves the claims to their lease and their
completion record. A retried event makes its first attempts again: a receiver that already got
the webhook gets it again with the same `webhook-id` (docs/delivery.md). So the two writes
that are not about delivery, the first-attempt pages (3) and the analytics rows (5), never fail
an event when they fail: what was not written goes to the spill queue (`spill`, `jobhooks.spill`)
for the spill function to write, and the claims complete (docs/ingest.md, "When a write after
the webhooks fails"). Only when the spill queue refuses too, or there is none (the management
API's service, which makes no first attempt), does the event fail as above. `ingest_record` is
the same path for one message. The management API re-fans an event out (`refan_out`, no row: the
event has one) and replays a quarantined message through this same path (`reingest`, a row);
its service has no first attempts: every task goes through the delivery queue.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Final

from jobhooks.delivery.first_attempt import EventDeliveries
from jobhooks.delivery.first_attempts import FirstAttemptPage, new_batch_id
from jobhooks.delivery.model import DeliveryOutcome
from jobhooks.delivery_task import DeliveryTask
from jobhooks.inbound.event import JobEvent
from jobhooks.inbound.job_events import VerificationPolicy
from jobhooks.inbound.outcome import OutcomeData
from jobhooks.inbound.rejection import RejectedMessageError
from jobhooks.ingest.exceptions import (
    ClaimInProgressError,
    ClaimLostError,
    QuarantinedMessageIncompleteError,
)
from jobhooks.ingest.fan_out_plan import plan_fan_out
from jobhooks.ingest.fetcher_keys import FetcherKeySource
from jobhooks.ingest.inbound import InboundMessage
from jobhooks.ingest.model import (
    MAX_EVENTS_PER_BATCH_RECORD,
    Claim,
    Duplicate,
    FanOutPlan,
    IngestOutcome,
    IngestResult,
)
from jobhooks.ingest.reading import read_message
from jobhooks.ingest.telemetry import IngestTelemetry
from jobhooks.ingest.writes_after_webhooks import record_outcomes, spill_pages
from jobhooks.storage.times import utc_now
from jobhooks.subscriptions.model import Subscription

if TYPE_CHECKING:
    from jobhooks.ingest.ports import (
        BusyRecordRetry,
        DeliveryTasks,
        EventClaims,
        FirstAttempts,
        OutcomeRecorder,
        Quarantine,
        Spill,
        SubscriptionMatcher,
    )
    from jobhooks.ingest.reads import FanOutResult
    from jobhooks.queued_task import QueuedTask

DEFAULT_MAX_LEASE_MS: Final = 120_000


# A plain class: `@dataclass` compiles its generated methods at import (about 1 ms of the cold
# start each on Python 3.12), and this private record uses none but `__init__`.
class _Claimed:
    """An event this invocation claimed, between its claim and its completion."""

    __slots__ = ("claim", "outcome", "plan", "subscriptions", "tasks")

    def __init__(
        self,
        claim: Claim,
        outcome: OutcomeData,
        plan: FanOutPlan,
        tasks: tuple[DeliveryTask, ...],
        subscriptions: tuple[Subscription, ...],
    ) -> None:
        self.claim = claim
        self.outcome = outcome
        self.plan = plan
        self.tasks = tasks
        # The subscription of each task, as matched (same order).
        self.subscriptions = subscriptions

    @property
    def event_id(self) -> str:
        return self.claim.event_id


class _Copy:
    """Another copy of an event this invocation claimed earlier in the same batch."""

    __slots__ = ("event_id",)

    def __init__(self, event_id: str) -> None:
        self.event_id = event_id


class IngestService:
    def __init__(
        self,
        *,
        claims: EventClaims,
        quarantine: Quarantine,
        subscriptions: SubscriptionMatcher,
        deliveries: DeliveryTasks,
        current_subscriptions: SubscriptionMatcher | None = None,
        keys: FetcherKeySource,
        policy: VerificationPolicy,
        producer_release: str = "",
        max_lease_ms: int = DEFAULT_MAX_LEASE_MS,
        telemetry: IngestTelemetry | None = None,
        clock: Callable[[], datetime] = utc_now,
        busy_records: BusyRecordRetry | None = None,
        analytics: OutcomeRecorder | None = None,
        first_attempts: FirstAttempts | Callable[[], FirstAttempts] | None = None,
        spill: Spill | None = None,
    ) -> None:
        """`policy` gives the freshness and legacy rules; its keys are replaced by `keys`.

        `subscriptions` may cache (the hot path); `current_subscriptions`, used for an
        operator's re-fan-out or replay, must not: a subscription added a moment ago counts.
        `analytics` writes each accepted event's row; None: analytics is off.
        `first_attempts` makes the first attempt of every delivery here; None: every task is
        enqueued for the deliver function (the management API's in-process ingest). A function
        that builds it is called when the first batch needs it: the HTTP client and its
        modules then stay out of the function's cold start.
        `spill` keeps the rows and first-attempt pages that could not be written, so their
        events complete; None: such an event fails and is retried.
        """
        self.claims = claims
        self.quarantine = quarantine
        self.subscriptions = subscriptions
        self.current_subscriptions = current_subscriptions or subscriptions
        self.deliveries = deliveries
        self.keys = keys
        self.policy = policy
        self.producer_release = producer_release
        self.max_lease_ms = max_lease_ms
        self.telemetry = telemetry or IngestTelemetry()
        self._clock = clock
        self.busy_records = busy_records
        self.analytics = analytics
        self._first_attempts = first_attempts
        self.spill = spill

    @property
    def first_attempts(self) -> FirstAttempts | None:
        if callable(self._first_attempts):
            self._first_attempts = self._first_attempts()
        return self._first_attempts

    # -- the ingest path -------------------------------------------------------------------

    def ingest_record(
        self,
        message: InboundMessage,
        *,
        remaining_ms: int | None = None,
        allow_stale: bool = False,
    ) -> IngestResult:
        """Ingest one message; returns when it may be acknowledged, raises when it must retry.

        `remaining_ms` is the invocation's remaining time: the claim's lease ends with it (or
        after `max_lease_ms`). `allow_stale` skips the `stale_timestamp` rule, for an operator's
        replay of a message older than the dedup retention (which can deliver it a second time).
        """
        return self._ingest(
            message,
            remaining_ms=remaining_ms,
            allow_stale=allow_stale,
            subscriptions=self.subscriptions,
        )

    def ingest_messages(
        self,
        messages: Sequence[InboundMessage],
        *,
        remaining_ms: int | None = None,
    ) -> list[IngestResult | Exception]:
        """Ingest an invocation's messages together; one result (or the error to retry) each.

        Each message is read and claimed on its own; then the deliveries of every claimed event
        go out in shared `SendMessageBatch` calls (10 tasks a call, whichever events they
        belong to), the claimed events' analytics rows in one sink call, and each claim is
        completed. An event whose tasks or row were not accepted gets its error (its claim is
        released), the others go on: a result is returned only when the message may be
        acknowledged.
        """
        results, first = self._ingest_all(
            messages,
            remaining_ms=remaining_ms,
            allow_stale=False,
            subscriptions=self.subscriptions,
        )
        self.telemetry.batch_ingested(results, first_attempts=first)
        return results

    def _ingest(
        self,
        message: InboundMessage,
        *,
        remaining_ms: int | None,
        allow_stale: bool,
        subscriptions: SubscriptionMatcher,
    ) -> IngestResult:
        (result,), first = self._ingest_all(
            [message],
            remaining_ms=remaining_ms,
            allow_stale=allow_stale,
            subscriptions=subscriptions,
        )
        self.telemetry.batch_ingested([result], first_attempts=first)
        if isinstance(result, Exception):
            raise result
        return result

    def _ingest_all(
        self,
        messages: Sequence[InboundMessage],
        *,
        remaining_ms: int | None,
        allow_stale: bool,
        subscriptions: SubscriptionMatcher,
    ) -> tuple[list[IngestResult | Exception], Sequence[DeliveryOutcome] | None]:
        results: list[IngestResult | Exception | _Claimed | _Copy] = []
        claimed_here: dict[str, _Claimed] = {}
        # Time first: a claim's batch id is also the sort key of its first-attempt pages.
        batch = new_batch_id(self._clock())
        for message in messages:
            claimed_or_not: IngestResult | _Claimed | _Copy
            try:
                claimed_or_not = self._claim(
                    message,
                    remaining_ms=remaining_ms,
                    allow_stale=allow_stale,
                    subscriptions=subscriptions,
                    claimed_here=claimed_here,
                    # One completion record per (at most) 100 claims of this invocation.
                    batch_id=f"{batch}.{len(claimed_here) // MAX_EVENTS_PER_BATCH_RECORD}",
                )
            except Exception as error:
                results.append(error)
                continue
            if isinstance(claimed_or_not, _Claimed):
                claimed_here[claimed_or_not.event_id] = claimed_or_not
            results.append(claimed_or_not)
        claimed = list(claimed_here.values())
        to_enqueue, failed, first = self._deliver_first(claimed, remaining_ms)
        failed.update(self._fan_out(to_enqueue))
        failed.update(self._record_outcomes([c for c in claimed if c.event_id not in failed]))
        completed: dict[str, IngestResult | Exception] = {}
        by_batch: dict[str, list[_Claimed]] = {}
        for claimed_event in claimed:
            if claimed_event.event_id in failed:
                completed[claimed_event.event_id] = self._abandon(
                    claimed_event, failed[claimed_event.event_id]
                )
            else:
                by_batch.setdefault(claimed_event.plan.batch_id, []).append(claimed_event)
        for batch_id, done in by_batch.items():
            completed.update(self._complete(batch_id, done))
        finished: list[IngestResult | Exception] = []
        for result in results:
            if isinstance(result, _Claimed):
                finished.append(completed[result.event_id])
            elif isinstance(result, _Copy):
                finished.append(self._copy_result(result, completed[result.event_id]))
            else:
                finished.append(result)
        return finished, first

    def _copy_result(
        self, copy: _Copy, first: IngestResult | Exception
    ) -> IngestResult | Exception:
        """A second copy of an event claimed in the same batch shares the first one's fate."""
        if isinstance(first, Exception):
            return first
        self.telemetry.duplicate_in_batch(copy.event_id)
        return IngestResult(IngestOutcome.DUPLICATE, event_id=copy.event_id)

    def _claim(
        self,
        message: InboundMessage,
        *,
        remaining_ms: int | None,
        allow_stale: bool,
        subscriptions: SubscriptionMatcher,
        claimed_here: Mapping[str, _Claimed],
        batch_id: str,
    ) -> IngestResult | _Claimed | _Copy:
        """Read and claim one message: its final result (rejected, duplicate) or its claim."""
        self.telemetry.record_started(message)
        try:
            event = self._read(message, allow_stale=allow_stale)
        except RejectedMessageError as rejection:
            quarantined = self.quarantine.quarantine_message(message, rejection)
            self.telemetry.rejected(quarantined)
            return IngestResult(
                IngestOutcome.REJECTED,
                event_id=quarantined.event_id,
                reason=rejection.reason,
                quarantine_id=quarantined.quarantine_id,
            )
        self.telemetry.event_identified(event.event_id)
        if event.event_id in claimed_here:
            # Our own claim, not another invocation's: the copy waits for this batch's outcome.
            return _Copy(event.event_id)
        # The fan-out is decided before the claim, so that the claim's one write records it.
        planned = plan_fan_out(
            event,
            batch_id=batch_id,
            subscriptions=subscriptions,
            producer_release=self.producer_release,
        )
        try:
            attempt = self.claims.claim_event(
                event, lease_ms=self._lease_ms(remaining_ms), plan=planned.plan
            )
        except ClaimInProgressError as busy:
            self.telemetry.claim_busy(event.event_id)
            if self.busy_records is not None and message.receipt_handle:
                self.busy_records.retry_after_lease(message.receipt_handle, busy.lease_until_ms)
            raise
        if isinstance(attempt, Duplicate):
            self.telemetry.duplicate(attempt.existing, tenant_id=event.tenant_id)
            return IngestResult(IngestOutcome.DUPLICATE, event_id=event.event_id)
        if attempt.took_over is not None:
            self.telemetry.claim_taken_over(attempt)
        return _Claimed(
            attempt, planned.outcome, planned.plan, planned.tasks, planned.subscriptions
        )

    # -- first attempts --------------------------------------------------------------------

    def _deliver_first(
        self, claimed: Sequence[_Claimed], remaining_ms: int | None
    ) -> tuple[dict[str, list[QueuedTask]], dict[str, Exception], Sequence[DeliveryOutcome] | None]:
        """The claimed events' tasks for the delivery queue, the events to retry, and the first
        attempts' outcomes: every task is queued without first attempts; with them, the
        delivery stage POSTs and settles each now and says what is left to enqueue."""
        if self.first_attempts is None or not any(c.tasks for c in claimed):
            return {c.event_id: list(c.tasks) for c in claimed}, {}, None
        report = self.first_attempts.deliver_first(
            [
                EventDeliveries(
                    c.event_id,
                    c.claim.tenant_id,
                    c.plan.batch_id,
                    tuple(zip(c.tasks, c.subscriptions, strict=True)),
                )
                for c in claimed
            ],
            remaining_ms=remaining_ms,
            spill_pages=self._spilled_pages if self.spill is not None else None,
        )
        self.telemetry.first_attempts_made(report.outcomes)
        return report.to_enqueue, report.failed, report.outcomes

    # -- the writes after the claims -------------------------------------------------------

    def _fan_out(self, to_enqueue: Mapping[str, Sequence[QueuedTask]]) -> dict[str, Exception]:
        """Enqueue every claimed event's tasks together; the events whose tasks SQS refused."""
        groups = [(event_id, tasks) for event_id, tasks in to_enqueue.items() if tasks]
        if not groups:
            return {}
        return dict(self.deliveries.enqueue_events(groups))

    def _record_outcomes(self, claimed: Sequence[_Claimed]) -> dict[str, Exception]:
        """Write the rows of the events whose deliveries are enqueued; the events to retry."""
        return record_outcomes(
            [(c.event_id, c.outcome) for c in claimed],
            analytics=self.analytics,
            spill=self.spill,
            telemetry=self.telemetry,
        )

    def _spilled_pages(self, pages: Sequence[FirstAttemptPage], error: Exception) -> bool:
        return spill_pages(pages, error, spill=self.spill, telemetry=self.telemetry)

    def _complete(
        self, batch_id: str, claimed: Sequence[_Claimed]
    ) -> dict[str, IngestResult | Exception]:
        """One completion record for the batch's done events; on failure, each retries."""
        try:
            records = self.claims.complete_batch(batch_id, [(c.claim, c.plan) for c in claimed])
        except Exception as error:
            return {c.event_id: self._abandon(c, error) for c in claimed}
        results: dict[str, IngestResult | Exception] = {}
        for record in records:
            self.telemetry.accepted(record)
            results[record.event_id] = IngestResult(
                IngestOutcome.ACCEPTED, event_id=record.event_id, deliveries=record.matched or 0
            )
        return results

    def _abandon(self, claimed: _Claimed, error: Exception) -> Exception:
        """Release the claim after a failure, so the retry starts over at once."""
        if isinstance(error, ClaimLostError):
            return error
        # Only an exception: a crash (timeout, out of memory) runs nothing, and the lease
        # is what frees the claim then.
        released = self._release(claimed.claim)
        self.telemetry.fan_out_failed(claimed.event_id, error, released=released)
        return error

    def check_keys(self) -> None:
        """Raise `FetcherKeysUnavailableError` now, once per invocation, not once per record."""
        self.keys.keys()

    # -- management: read, re-fan-out, replay ----------------------------------------------

    def refan_out(self, event_id: str, *, replay: bool = False) -> FanOutResult:
        """Enqueue the stored payload of a done event to its tenant's matching subscriptions
        now (`jobhooks.ingest.refan_out`)."""
        # The management API's operation: the ingest function never re-fans out.
        from jobhooks.ingest.refan_out import refan_out

        return refan_out(
            event_id,
            claims=self.claims,
            subscriptions=self.current_subscriptions,
            deliveries=self.deliveries,
            replay=replay,
        )

    def reingest(
        self,
        quarantine_id: str,
        *,
        allow_stale: bool = False,
        remaining_ms: int | None = None,
    ) -> IngestResult:
        """Replay a quarantined message through `ingest_record`, as if it arrived now.

        The receipt clock is now, not the original SentTimestamp: judged against its first
        receipt, a message could pass freshness after the claim of an earlier copy expired and
        be delivered twice. A replay rejected again gets a new quarantine record
        (`replayed_as`); the original is marked replayed either way. `remaining_ms` is the
        caller's remaining time (the claim's lease), as for `ingest_record`.
        """
        quarantined = self.quarantine.get(quarantine_id)
        if quarantined.message_truncated:
            raise QuarantinedMessageIncompleteError(quarantine_id)
        message = InboundMessage(
            body=quarantined.message,
            message_id=quarantined.sqs_message_id,
            sent_at=self._clock(),
            replay_of=quarantine_id,
        )
        result = self._ingest(
            message,
            remaining_ms=remaining_ms,
            allow_stale=allow_stale,
            subscriptions=self.current_subscriptions,
        )
        self.quarantine.mark_replayed(
            quarantine_id, outcome=result.summary, replayed_as=result.quarantine_id
        )
        return result

    # -- internals -------------------------------------------------------------------------

    def _read(self, message: InboundMessage, *, allow_stale: bool) -> JobEvent:
        return read_message(
            message,
            keys=self.keys,
            policy=self.policy,
            allow_stale=allow_stale,
            telemetry=self.telemetry,
        )

    def _lease_ms(self, remaining_ms: int | None) -> int:
        if remaining_ms is None:
            return self.max_lease_ms
        return max(1, min(remaining_ms, self.max_lease_ms))

    def _release(self, claim: Claim) -> bool:
        try:
            return self.claims.release(claim)
        except Exception as error:  # the lease frees it later; the original error matters more
            self.telemetry.logger.warning(
                "could not release the claim; it frees itself when its lease ends",
                extra={"event_id": claim.event_id, "error": str(error)},
            )
            return False
