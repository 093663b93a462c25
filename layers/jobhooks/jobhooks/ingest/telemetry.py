"""What ingest tells operators: structured logs with `ce-id` as the correlation id, EMF metrics.

The use case reports through `IngestTelemetry`; the ingest function passes `PowertoolsTelemetry`
(Logger + Metrics, flushed by the handler's decorators), anything else (the management API
replaying a message, tests) can keep the logging-only base. Bodies and keys are never logged;
rejection details are, as they name a rule and a header, never a secret.

Metrics (namespace from `POWERTOOLS_METRICS_NAMESPACE`, dimension `service`): Received,
Accepted, Rejected (also per `reason`: 12 bounded values, one per `Reason`), Duplicates,
DeliveriesEnqueued (deliveries fanned out, whether their first attempt succeeded or not),
Unmatched, AnalyticsWriteFailed (an accepted event whose analytics row the sink did not take),
AnalyticsRowsSpilled and FirstAttemptPagesSpilled (what the spill queue took instead, for the
spill function to write: the events complete), SpillRefused (the spill queue refused too: those
events are retried, and their first attempts POSTed again); and for the first attempts ingest
makes, the deliver function's delivery metrics (`jobhooks.delivery.metrics`: DeliveryAttempts,
DeliverySucceeded, DeliveryFailed, ...).
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from jobhooks.delivery.model import DeliveryOutcome, DeliveryResult
from jobhooks.ingest.inbound import InboundMessage
from jobhooks.ingest.model import (
    Claim,
    EventRecord,
    IngestOutcome,
    IngestResult,
)

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger, Metrics

    from jobhooks.ingest.quarantined import QuarantinedMessage

RECEIVED: Final = "Received"
ACCEPTED: Final = "Accepted"
REJECTED: Final = "Rejected"
DUPLICATES: Final = "Duplicates"
DELIVERIES_ENQUEUED: Final = "DeliveriesEnqueued"
UNMATCHED: Final = "Unmatched"
ANALYTICS_WRITE_FAILED: Final = "AnalyticsWriteFailed"
SPILLED: Final = {
    "analytics rows": "AnalyticsRowsSpilled",
    "first-attempt pages": "FirstAttemptPagesSpilled",
}
SPILL_REFUSED: Final = "SpillRefused"


# The batch line's names for what the first attempts came to; anything else (a retry scheduled,
# a delivery parked or settled by a duplicate) is a failed attempt.
_FIRST_ATTEMPT_COUNTS: Final = {
    DeliveryResult.SUCCEEDED: "succeeded",
    DeliveryResult.GONE: "gone",
    DeliveryResult.NOT_STARTED: "skipped",
    DeliveryResult.SKIPPED: "skipped",
}


class IngestTelemetry:
    """Logs only. `logger` is a standard or Powertools logger."""

    def __init__(self, logger: Any = None) -> None:
        self.logger = logger if logger is not None else logging.getLogger("jobhooks.ingest")

    def record_started(self, message: InboundMessage) -> None:
        pass

    def event_identified(self, event_id: str) -> None:
        pass

    def rejected(self, quarantined: QuarantinedMessage) -> None:
        self.logger.warning(
            "message rejected and quarantined",
            extra={
                "reason": quarantined.reason.value,
                "detail": quarantined.detail,
                "quarantine_id": quarantined.quarantine_id,
                "claimed_event_id": quarantined.event_id,
                "sqs_message_id": quarantined.sqs_message_id,
            },
        )

    def duplicate(self, existing: EventRecord, *, tenant_id: str) -> None:
        if existing.tenant_id and existing.tenant_id != tenant_id:
            # Event ids carry no tenant: two tenants' jobs with one job id would collide here.
            self.logger.error(
                "a ce-id already ingested for another tenant was acknowledged as a duplicate",
                extra={
                    "event_id": existing.event_id,
                    "tenant_id": tenant_id,
                    "ingested_for_tenant": existing.tenant_id,
                },
            )
        # DEBUG: counted in the batch's INFO line; a re-emitting producer makes many.
        self.logger.debug(
            "duplicate of an ingested event acknowledged",
            extra={"event_id": existing.event_id, "done_at": str(existing.done_at)},
        )

    def duplicate_in_batch(self, event_id: str) -> None:
        self.logger.debug(
            "duplicate of an event ingested in the same batch acknowledged",
            extra={"event_id": event_id},
        )

    def claim_busy(self, event_id: str) -> None:
        self.logger.info(
            "event is being ingested by another invocation; retrying later",
            extra={"event_id": event_id},
        )

    def claim_taken_over(self, claim: Claim) -> None:
        self.logger.warning(
            "took over a claim whose owner stopped",
            extra={"event_id": claim.event_id, "took_over": str(claim.took_over)},
        )

    def accepted(self, record: EventRecord) -> None:
        # DEBUG: at INFO one line per event was half of the bridge's log bytes; the batch's
        # INFO line (`batch_ingested`) names every accepted event.
        self.logger.debug(
            "event ingested",
            extra={
                "event_id": record.event_id,
                "tenant_id": record.tenant_id,
                "event_type": record.event_type,
                "deliveries": record.matched,
            },
        )

    def first_attempts_made(self, outcomes: Sequence[DeliveryOutcome]) -> None:
        """The batch's first attempts, as the deliver function's metrics count attempts."""

    def batch_ingested(
        self,
        results: Sequence[IngestResult | Exception],
        *,
        first_attempts: Sequence[DeliveryOutcome] | None = None,
    ) -> None:
        """One compact INFO line per invocation: its outcomes counted, its accepted and
        duplicate event ids (what the per-event INFO lines used to say), and how its first
        attempts went (succeeded, failed, gone, skipped: not attempted)."""
        outcomes: Counter[str] = Counter()
        accepted: list[str] = []
        duplicates: list[str] = []
        deliveries = 0
        for result in results:
            if isinstance(result, Exception):
                outcomes["retrying"] += 1
                continue
            outcomes[result.outcome.value] += 1
            if result.outcome is IngestOutcome.ACCEPTED and result.event_id:
                accepted.append(result.event_id)
                deliveries += result.deliveries
            elif result.outcome is IngestOutcome.DUPLICATE and result.event_id:
                duplicates.append(result.event_id)
        if first_attempts is not None:
            made = Counter(_FIRST_ATTEMPT_COUNTS.get(o.result, "failed") for o in first_attempts)
            for name in ("succeeded", "failed", "gone", "skipped"):
                outcomes[f"first_attempts_{name}"] = made[name]
        self.logger.info(
            "ingest batch done",
            extra={
                **outcomes,
                "deliveries": deliveries,
                "accepted_ids": accepted,
                "duplicate_ids": duplicates,
            },
        )

    def fan_out_failed(self, event_id: str, error: Exception, *, released: bool) -> None:
        self.logger.warning(
            "ingest failed after the claim; the record will be retried",
            extra={"event_id": event_id, "error": str(error), "claim_released": released},
        )

    def analytics_write_failed(
        self, event_id: str, error: Exception, *, spilled: bool = False
    ) -> None:
        fields = {
            "event_id": event_id,
            "code": getattr(error, "code", type(error).__name__),
            "error": str(error),
        }
        if spilled:
            # A warning: the row is kept and its webhooks are untouched; the spill function
            # writes it (docs/analytics.md, "When a row cannot be written").
            self.logger.warning(
                "the analytics row was not written; spilled for the spill function to write",
                extra=fields,
            )
            return
        # An error: the record is retried, and its first attempts are made again.
        self.logger.error(
            "the analytics row was not written; the record will be retried (its deliveries "
            "are enqueued)",
            extra=fields,
        )

    def spilled(self, kind: str, count: int, messages: int, error: Exception) -> None:
        self.logger.warning(
            f"{kind} not written; sent to the spill queue",
            extra={
                "spilled": count,
                "spill_messages": messages,
                "code": getattr(error, "code", type(error).__name__),
                "error": str(error),
            },
        )

    def spill_refused(self, kind: str, error: Exception) -> None:
        # An error: the events retry, and a receiver gets their webhooks again (same id).
        self.logger.error(
            f"{kind} not written and the spill queue refused them; the records will be "
            "retried (their first attempts are made again)",
            extra={"code": getattr(error, "code", type(error).__name__), "error": str(error)},
        )

    def keys_refreshed(self) -> None:
        self.logger.info("the Fetcher keys changed in Secrets Manager; verified again")


class PowertoolsTelemetry(IngestTelemetry):
    """Logs through a Powertools `Logger` and counts with Powertools `Metrics`."""

    def __init__(self, logger: Logger, metrics: Metrics) -> None:
        super().__init__(logger)
        self._powertools_logger = logger
        self.metrics = metrics
        # Counts add up over the batch and go out once each when it is done: EMF writes one
        # value per `add_metric`, and ten `1.0`s per metric per invocation were a tenth of the
        # bridge's log bytes (docs/cost.md). Sums are the same.
        self._counts: defaultdict[str, float] = defaultdict(float)

    def record_started(self, message: InboundMessage) -> None:
        self._powertools_logger.remove_keys(["correlation_id"])
        self._powertools_logger.append_keys(sqs_message_id=message.message_id)
        self._count(RECEIVED)

    def event_identified(self, event_id: str) -> None:
        self._powertools_logger.set_correlation_id(event_id)

    def rejected(self, quarantined: QuarantinedMessage) -> None:
        super().rejected(quarantined)
        if _metrics_disabled():
            return
        from aws_lambda_powertools.metrics import MetricUnit, single_metric

        # Plain `Rejected` (service only) feeds the alarm; the per-reason series needs its own
        # blob, since every metric of one EMF blob shares its dimensions.
        self._count(REJECTED)
        dimensions = dict(self.metrics.default_dimensions)
        if self.metrics.service:
            dimensions["service"] = self.metrics.service
        with single_metric(
            name=REJECTED,
            unit=MetricUnit.Count,
            value=1,
            namespace=self.metrics.namespace,
            default_dimensions=dimensions,
        ) as metric:
            metric.add_dimension(name="reason", value=quarantined.reason.value)

    def duplicate(self, existing: EventRecord, *, tenant_id: str) -> None:
        super().duplicate(existing, tenant_id=tenant_id)
        self._count(DUPLICATES)

    def batch_ingested(
        self,
        results: Sequence[IngestResult | Exception],
        *,
        first_attempts: Sequence[DeliveryOutcome] | None = None,
    ) -> None:
        # The batch's line is no one record's: drop the last record's keys.
        self._powertools_logger.remove_keys(["correlation_id", "sqs_message_id"])
        super().batch_ingested(results, first_attempts=first_attempts)
        self._flush_counts()

    def first_attempts_made(self, outcomes: Sequence[DeliveryOutcome]) -> None:
        # The deliver function's metric names and dimensions: the alarms and the dashboard
        # count every attempt, wherever it was made.
        from jobhooks.delivery.metrics import PowertoolsDeliveryMetrics

        try:
            PowertoolsDeliveryMetrics(self.metrics).record_outcomes(outcomes)
        except Exception:  # metrics must never turn delivered webhooks into retries
            self.logger.exception("recording first-attempt metrics failed")

    def duplicate_in_batch(self, event_id: str) -> None:
        super().duplicate_in_batch(event_id)
        self._count(DUPLICATES)

    def accepted(self, record: EventRecord) -> None:
        super().accepted(record)
        self._count(ACCEPTED)
        self._count(DELIVERIES_ENQUEUED, record.matched or 0)
        if not record.matched:
            self._count(UNMATCHED)

    def analytics_write_failed(
        self, event_id: str, error: Exception, *, spilled: bool = False
    ) -> None:
        super().analytics_write_failed(event_id, error, spilled=spilled)
        self._count(ANALYTICS_WRITE_FAILED)

    def spilled(self, kind: str, count: int, messages: int, error: Exception) -> None:
        super().spilled(kind, count, messages, error)
        self._count(SPILLED[kind], count)

    def spill_refused(self, kind: str, error: Exception) -> None:
        super().spill_refused(kind, error)
        self._count(SPILL_REFUSED)

    def _count(self, name: str, value: float = 1) -> None:
        if _metrics_disabled():
            return
        self._counts[name] += value

    def _flush_counts(self) -> None:
        counts, self._counts = self._counts, defaultdict(float)
        if _metrics_disabled():
            return
        from aws_lambda_powertools.metrics import MetricUnit

        for name, value in counts.items():
            self.metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def _metrics_disabled() -> bool:
    # Powertools 3.x keeps one metric store per process and never clears it while metrics are
    # disabled (`jobhooks dev`, the CLI's in-process replays): a value added then would stay
    # until a later flush with metrics enabled reported it as that invocation's.
    from aws_lambda_powertools.metrics.functions import is_metrics_disabled

    return bool(is_metrics_disabled())
