"""The ingest use case: one forwarded message in, its deliveries enqueued (or its rejection kept).

`IngestService.ingest_record` reads in the order an event flows:

1. verify and read the message (`jobhooks.inbound.job_events`); a rejection is quarantined,
   counted and acknowledged;
2. claim its `ce-id` with a lease (`claims`); a duplicate of a done event is acknowledged with no
   side effect, one still in progress elsewhere is retried later;
3. build the webhook payload once, match the tenant's subscriptions, enqueue one delivery task
   each (`fan_out`);
4. write the event's analytics row (`jobhooks.analytics`): the webhook's outcome, whether or not
   a subscription wanted it;
5. complete the claim, which records the fan-out (and lists the event as unmatched when nothing
   wanted it).

A record is acknowledged only when `ingest_record` returns. Whatever fails after step 2 releases
the claim (conditional on its token) and re-raises, so the retry starts over at once; a crash
leaves the claim to its lease. The row is written after the deliveries are enqueued, so a sink
that fails delays the claim's completion, never a webhook: the retry enqueues the same delivery
tasks (same ids, deduplicated by deliver) and writes the row then (docs/analytics.md, "When a row
cannot be written"). The management API re-fans an event out (`refan_out`, no row: the event
has one) and replays a quarantined message through this same path (`reingest`, a row).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from jobhooks.analytics.exceptions import AnalyticsError
from jobhooks.clock import utc_now
from jobhooks.inbound.event import JobEvent
from jobhooks.inbound.job_events import VerificationPolicy, read_forwarded_message
from jobhooks.inbound.keys import parse_key_list
from jobhooks.inbound.outcome import Outcome, to_webhook, webhook_json
from jobhooks.inbound.rejection import Reason, RejectedMessageError
from jobhooks.ingest.busy_records import BusyRecords
from jobhooks.ingest.claims import (
    DEFAULT_PAGE_SIZE,
    Claim,
    ClaimStore,
    Duplicate,
    EventPage,
    EventRecord,
)
from jobhooks.ingest.exceptions import (
    ClaimInProgressError,
    ClaimLostError,
    EventNotFoundError,
    QuarantinedMessageIncompleteError,
)
from jobhooks.ingest.fan_out import DeliveryQueue, delivery_tasks_for
from jobhooks.ingest.fetcher_keys import FetcherKeySource, SecretKeys, StaticKeys
from jobhooks.ingest.inbound import InboundMessage
from jobhooks.ingest.ports import (
    DeliveryTasks,
    EventClaims,
    OutcomeRecorder,
    Quarantine,
    SubscriptionMatcher,
)
from jobhooks.ingest.quarantine import QuarantineStore
from jobhooks.ingest.settings import IngestSettings
from jobhooks.ingest.telemetry import IngestTelemetry

DEFAULT_MAX_LEASE_MS: Final = 120_000


class IngestOutcome(StrEnum):
    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True)
class IngestResult:
    outcome: IngestOutcome
    event_id: str | None = None
    """The verified `ce-id`; for a rejection, the one the message claims (unverified)."""
    deliveries: int = 0
    reason: Reason | None = None
    quarantine_id: str | None = None

    @property
    def summary(self) -> str:
        """`accepted`, `duplicate` or `rejected:<reason>`."""
        if self.reason is not None:
            return f"{self.outcome.value}:{self.reason.value}"
        return self.outcome.value

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome.value,
            "event_id": self.event_id,
            "deliveries": self.deliveries,
            "reason": self.reason.value if self.reason else None,
            "quarantine_id": self.quarantine_id,
        }


@dataclass(frozen=True, slots=True)
class FanOutResult:
    event_id: str
    deliveries: int
    subscription_ids: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "deliveries": self.deliveries,
            "subscription_ids": list(self.subscription_ids),
        }


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
        busy_records: BusyRecords | None = None,
        analytics: OutcomeRecorder | None = None,
    ) -> None:
        """`policy` gives the freshness and legacy rules; its keys are replaced by `keys`.

        `subscriptions` may cache (the hot path); `current_subscriptions`, used for an
        operator's re-fan-out or replay, must not: a subscription added a moment ago counts.
        `analytics` writes each accepted event's row; None: analytics is off.
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

    def _ingest(
        self,
        message: InboundMessage,
        *,
        remaining_ms: int | None,
        allow_stale: bool,
        subscriptions: SubscriptionMatcher,
    ) -> IngestResult:
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

        try:
            attempt = self.claims.claim_event(event, lease_ms=self._lease_ms(remaining_ms))
        except ClaimInProgressError as busy:
            self.telemetry.claim_busy(event.event_id)
            if self.busy_records is not None and message.receipt_handle:
                self.busy_records.retry_after_lease(message.receipt_handle, busy.lease_until_ms)
            raise
        if isinstance(attempt, Duplicate):
            self.telemetry.duplicate(attempt.existing, tenant_id=event.tenant_id)
            return IngestResult(IngestOutcome.DUPLICATE, event_id=event.event_id)
        claim = attempt
        if claim.took_over is not None:
            self.telemetry.claim_taken_over(claim)

        try:
            webhook = to_webhook(event, release=self.producer_release)
            payload = webhook_json(webhook)
            tasks = delivery_tasks_for(
                event_id=event.event_id,
                tenant_id=event.tenant_id,
                event_type=event.event_type,
                payload=payload,
                subscriptions=subscriptions.matching(event.tenant_id, event.event_type),
            )
            if tasks:
                self.deliveries.enqueue(event.event_id, tasks)
            self._record_outcome(event.event_id, webhook.data)
            record = self.claims.complete(
                claim,
                matched=len(tasks),
                payload=payload,
                subscription_ids=[task.subscription_id for task in tasks],
            )
        except ClaimLostError:
            raise  # someone else owns it now: nothing of ours to release
        except Exception as error:
            # Only an exception: a crash (timeout, out of memory) runs nothing, and the lease
            # is what frees the claim then.
            released = self._release(claim)
            self.telemetry.fan_out_failed(event.event_id, error, released=released)
            raise
        self.telemetry.accepted(record)
        return IngestResult(
            IngestOutcome.ACCEPTED, event_id=event.event_id, deliveries=record.matched or 0
        )

    def check_keys(self) -> None:
        """Raise `FetcherKeysUnavailableError` now, once per invocation, not once per record."""
        self.keys.keys()

    # -- management: read, re-fan-out, replay ----------------------------------------------

    def get_event(self, event_id: str) -> EventRecord | None:
        """The claim of `event_id` (in progress or done), None when absent or expired."""
        return self.claims.get(event_id)

    def list_unmatched(
        self, tenant_id: str, *, limit: int = DEFAULT_PAGE_SIZE, cursor: str | None = None
    ) -> EventPage:
        return self.claims.list_unmatched(tenant_id, limit=limit, cursor=cursor)

    def refan_out(self, event_id: str, *, replay: bool = False) -> FanOutResult:
        """Enqueue the stored payload of a done event to its tenant's matching subscriptions now.

        Subscriptions that already received it are skipped by the deliver side (same
        `delivery_id`) unless `replay` asks for a new POST. Raises `EventNotFoundError` or
        `EventInProgressError`.
        """
        record = self.claims.get_done(event_id)
        if record.payload is None:  # not written by this code: nothing to re-send
            raise EventNotFoundError(event_id)
        tasks = delivery_tasks_for(
            event_id=record.event_id,
            tenant_id=record.tenant_id,
            event_type=record.event_type,
            payload=record.payload or "",
            subscriptions=self.current_subscriptions.matching(record.tenant_id, record.event_type),
            replay=replay,
        )
        if tasks:
            self.deliveries.enqueue(record.event_id, tasks)
        self.claims.record_fan_out(
            record, matched=len(tasks), subscription_ids=[task.subscription_id for task in tasks]
        )
        return FanOutResult(
            record.event_id, len(tasks), tuple(task.subscription_id for task in tasks)
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
        try:
            return read_forwarded_message(
                message.body, self._policy(allow_stale=allow_stale), message.sent_at
            )
        except RejectedMessageError as rejection:
            # A key added to the secret after our cached read must not quarantine its messages.
            if rejection.reason is not Reason.SIGNATURE_MISMATCH or not self.keys.refresh():
                raise
        self.telemetry.keys_refreshed()
        return read_forwarded_message(
            message.body, self._policy(allow_stale=allow_stale), message.sent_at
        )

    def _policy(self, *, allow_stale: bool) -> VerificationPolicy:
        policy = replace(self.policy, keys=self.keys.keys())
        # freshness: a maximum age of 0 turns the stale check off (the future check stays).
        return replace(policy, max_age_seconds=0) if allow_stale else policy

    def _record_outcome(self, event_id: str, outcome: Outcome) -> None:
        if self.analytics is None:
            return
        try:
            self.analytics.record([outcome])
        except AnalyticsError as error:
            self.telemetry.analytics_write_failed(event_id, error)
            raise

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


def build_ingest_service(
    settings: IngestSettings,
    *,
    session: Any = None,
    telemetry: IngestTelemetry | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> IngestService:
    """The service over real AWS clients (from `session`, or boto3's default session)."""
    import boto3
    from botocore.config import Config

    from jobhooks.analytics.recorder import build_analytics_recorder
    from jobhooks.subscriptions.store import SubscriptionStore

    make_client = session.client if session is not None else boto3.client
    # Matching never decrypts a secret: the subscription stores need no KMS client.
    config = Config(
        retries={"mode": "standard", "max_attempts": 3},
        connect_timeout=3,
        read_timeout=10,
    )
    dynamodb = make_client("dynamodb", config=config)
    sqs = make_client("sqs", config=config)
    keys: FetcherKeySource
    if settings.fetcher_keys_secret_arn:
        from aws_lambda_powertools.utilities.parameters import SecretsProvider

        provider = SecretsProvider(boto3_client=make_client("secretsmanager", config=config))
        keys = SecretKeys(settings.fetcher_keys_secret_arn, provider)
    else:
        keys = StaticKeys(parse_key_list(settings.fetcher_hmac_keys))
    return IngestService(
        claims=ClaimStore(
            settings.claims_table,
            dynamodb,
            retention_seconds=settings.claim_retention_seconds,
            clock=clock,
        ),
        quarantine=QuarantineStore(
            settings.quarantine_table,
            dynamodb,
            retention_seconds=settings.quarantine_retention_seconds,
            clock=clock,
        ),
        subscriptions=SubscriptionStore(
            settings.subscriptions_table,
            dynamodb,
            None,
            matching_cache_seconds=settings.subscription_cache_seconds,
        ),
        current_subscriptions=SubscriptionStore(settings.subscriptions_table, dynamodb, None),
        deliveries=DeliveryQueue(settings.delivery_queue_url, sqs),
        keys=keys,
        policy=settings.verification_policy(keys=()),
        producer_release=settings.producer_release,
        max_lease_ms=int(settings.claim_lease_max_seconds * 1000),
        telemetry=telemetry,
        clock=clock,
        busy_records=(
            BusyRecords(settings.ingest_queue_url, sqs, clock=clock)
            if settings.ingest_queue_url
            else None
        ),
        analytics=build_analytics_recorder(settings, session=session),
    )


@functools.cache
def ingest_service(telemetry: IngestTelemetry | None = None) -> IngestService:
    """The process's service, built from the environment on first use (then reused).

    Tests that change the environment or the boto3 default session call
    `ingest_service.cache_clear()`.
    """
    return build_ingest_service(IngestSettings.from_env(), telemetry=telemetry)
