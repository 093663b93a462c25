"""The spill function's use case: spill messages in, rows and pages written where they belong.

`SpillDrain.drain_batch(event)` takes an SQS event of the spill queue and answers the partial
batch response. For each message, in the order the data flows:

1. read it (`messages.read_spill_message`); a message this code cannot read is parked at once
   in the spill dead-letter queue (a retry would change nothing);
2. analytics rows: pseudonymize those ingest could not (its key was unreadable), then write
   them through the analytics sink (Firehose); first-attempt pages: put them in
   `FirstAttemptsTable`;
3. a write that fails leaves the message to come back later: its visibility is set to the
   next delay of `retry_delay` (doubling from `first_retry_seconds` up to
   `max_retry_seconds`) and it is reported as failed. After the queue's maxReceiveCount SQS
   moves it to the spill dead-letter queue, where it waits for a redrive.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from jobhooks.analytics.pseudonymize import PSEUDONYMIZED_COLUMNS, Pseudonymizer
from jobhooks.analytics.row import AnalyticsRow
from jobhooks.analytics.sink import AnalyticsSink
from jobhooks.delivery.first_attempts import FirstAttemptPage
from jobhooks.spill.exceptions import SpilledMessageInvalidError
from jobhooks.spill.messages import SpilledRows, SpillMessage, read_spill_message

_log = logging.getLogger("jobhooks.spill")

DEFAULT_FIRST_RETRY_SECONDS: Final = 60
DEFAULT_MAX_RETRY_SECONDS: Final = 3600


class PageWriter(Protocol):
    def write(self, pages: Sequence[FirstAttemptPage]) -> None: ...


class SpillMetrics(Protocol):
    def count(self, name: str, value: int = 1) -> None: ...


class _NoMetrics:
    def count(self, name: str, value: int = 1) -> None:
        pass


@dataclass(frozen=True, slots=True)
class RetryDelay:
    """Seconds a failed spill message stays hidden, by how often it was received."""

    first_retry_seconds: int = DEFAULT_FIRST_RETRY_SECONDS
    max_retry_seconds: int = DEFAULT_MAX_RETRY_SECONDS

    def after(self, receive_count: int) -> int:
        doublings = min(max(receive_count, 1) - 1, 30)
        delay: int = self.first_retry_seconds << doublings
        return min(delay, self.max_retry_seconds)


class SpillDrain:
    def __init__(
        self,
        *,
        sink: AnalyticsSink | None,
        pseudonymizer: Pseudonymizer | None,
        pages: PageWriter,
        sqs: Any,
        queue_url: str,
        dead_letter_queue_url: str,
        retry_delay: RetryDelay | None = None,
        metrics: SpillMetrics | None = None,
    ) -> None:
        """`sink` None: analytics is off (rows are acknowledged unwritten, and logged)."""
        self.sink = sink
        self.pseudonymizer = pseudonymizer
        self.pages = pages
        self._sqs = sqs
        self.queue_url = queue_url
        self.dead_letter_queue_url = dead_letter_queue_url
        self.retry_delay = retry_delay or RetryDelay()
        self.metrics = metrics or _NoMetrics()

    def drain_batch(self, event: Mapping[str, Any]) -> dict[str, Any]:
        failures: list[dict[str, str]] = []
        # A target that failed once in this batch is not tried again in it: during an outage
        # each try would cost botocore's retries, and the batch would outlast the function.
        failed_kinds: set[type] = set()
        for record in event.get("Records") or []:
            if not self._drain_record(record, failed_kinds):
                failures.append({"itemIdentifier": str(record.get("messageId", ""))})
        return {"batchItemFailures": failures}

    def _drain_record(self, record: Mapping[str, Any], failed_kinds: set[type]) -> bool:
        """Whether the record may be acknowledged."""
        message_id = str(record.get("messageId", ""))
        try:
            spilled = read_spill_message(str(record.get("body", "")))
        except SpilledMessageInvalidError as error:
            _log.error(
                "spill message cannot be read; parked in the spill dead-letter queue",
                extra={"sqs_message_id": message_id, "error": str(error)},
            )
            return self._park(record)
        try:
            if type(spilled) in failed_kinds:
                raise _TargetFailedInBatchError()
            self.write(spilled)
        except Exception as error:
            failed_kinds.add(type(spilled))
            receives = _receive_count(record)
            delay = self.retry_delay.after(receives)
            _log.warning(
                "spilled writes failed again; retrying later",
                extra={
                    "sqs_message_id": message_id,
                    "receive_count": receives,
                    "retry_in_seconds": delay,
                    "code": getattr(error, "code", type(error).__name__),
                    "error": str(error),
                },
            )
            self.metrics.count("SpillWriteFailed")
            self._hide(record, delay)
            return False
        return True

    def write(self, spilled: SpillMessage) -> None:
        """Write one message's rows or pages; raises whatever their store raised."""
        if isinstance(spilled, SpilledRows):
            if self.sink is None:
                _log.warning(
                    "spilled analytics rows dropped: analytics is off in this deployment",
                    extra={"rows": len(spilled.rows)},
                )
                return
            rows = spilled.rows if spilled.pseudonymized else self._pseudonymized(spilled.rows)
            self.sink.put_rows(rows)
            self.metrics.count("SpilledRowsWritten", len(rows))
            _log.info("spilled analytics rows written", extra={"rows": len(rows)})
            return
        self.pages.write(spilled.pages)
        self.metrics.count("SpilledPagesWritten", len(spilled.pages))
        _log.info("spilled first-attempt pages written", extra={"pages": len(spilled.pages)})

    def _pseudonymized(self, rows: Sequence[AnalyticsRow]) -> tuple[AnalyticsRow, ...]:
        if self.pseudonymizer is None:
            return tuple(rows)
        pseudonymizer = self.pseudonymizer
        return tuple(
            row.model_copy(
                update={
                    column: pseudonymizer.pseudonym(column, getattr(row, column))
                    for column in PSEUDONYMIZED_COLUMNS
                }
            )
            for row in rows
        )

    def _hide(self, record: Mapping[str, Any], seconds: int) -> None:
        try:
            self._sqs.change_message_visibility(
                QueueUrl=self.queue_url,
                ReceiptHandle=record["receiptHandle"],
                VisibilityTimeout=seconds,
            )
        except Exception as error:  # it comes back after the queue's visibility timeout then
            _log.warning(
                "could not delay the spill message's retry",
                extra={"sqs_message_id": record.get("messageId"), "error": str(error)},
            )

    def _park(self, record: Mapping[str, Any]) -> bool:
        try:
            self._sqs.send_message(
                QueueUrl=self.dead_letter_queue_url, MessageBody=str(record.get("body", ""))
            )
        except Exception as error:  # retried; SQS's redrive parks it in the end all the same
            _log.warning(
                "could not park the unreadable spill message; it is retried",
                extra={"sqs_message_id": record.get("messageId"), "error": str(error)},
            )
            return False
        self.metrics.count("SpillParked")
        return True


class _TargetFailedInBatchError(Exception):
    def __init__(self) -> None:
        super().__init__("not tried: the same target failed earlier in this batch")


def _receive_count(record: Mapping[str, Any]) -> int:
    try:
        return int((record.get("attributes") or {}).get("ApproximateReceiveCount", 1))
    except (TypeError, ValueError):
        return 1
