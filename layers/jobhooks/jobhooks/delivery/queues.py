"""The SQS adapters of the delivery use case: the delivery queue's messages and the DLQ.

The use case speaks to them through `ports.QueueMessages` and `ports.DeadLetters`, so it never
holds an SQS client; tests pass in-memory fakes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from jobhooks.delivery.parking import ParkingSummary

_log = logging.getLogger(__name__)

# ChangeMessageVisibilityBatch takes at most 10 entries.
MAX_BATCH_ENTRIES: Final = 10


class DeliveryQueueMessages:
    """Defers a delivery-queue message (the deliver function's next attempt)."""

    def __init__(self, sqs: Any, queue_url: str) -> None:
        self._sqs = sqs
        self.queue_url = queue_url

    def hide(self, receipt_handle: str, seconds: int) -> None:
        try:
            self._sqs.change_message_visibility(
                QueueUrl=self.queue_url, ReceiptHandle=receipt_handle, VisibilityTimeout=seconds
            )
        except ClientError as error:
            # The message still comes back, after the visibility already in effect (the queue's
            # 6 minutes): sooner than planned, never lost.
            _log.warning(
                "could not delay the next attempt: %s",
                error.response.get("Error", {}).get("Code", "unknown"),
            )

    def hide_many(self, hides: Sequence[tuple[str, int]]) -> None:
        """One ChangeMessageVisibilityBatch per 10 messages; best effort as `hide` (a message
        not hidden comes back after the visibility already in effect)."""
        for start in range(0, len(hides), MAX_BATCH_ENTRIES):
            entries = [
                {"Id": str(n), "ReceiptHandle": receipt_handle, "VisibilityTimeout": seconds}
                for n, (receipt_handle, seconds) in enumerate(
                    hides[start : start + MAX_BATCH_ENTRIES]
                )
            ]
            try:
                response = self._sqs.change_message_visibility_batch(
                    QueueUrl=self.queue_url, Entries=entries
                )
            except ClientError as error:
                _log.warning(
                    "could not delay %d next attempts: %s",
                    len(entries),
                    error.response.get("Error", {}).get("Code", "unknown"),
                )
                continue
            failed = response.get("Failed") or []
            if failed:
                _log.warning(
                    "could not delay %d of %d next attempts: %s",
                    len(failed),
                    len(entries),
                    ", ".join(sorted({str(f.get("Code", "unknown")) for f in failed})),
                )


class DeliveryDlq:
    """The delivery DLQ (`parking`): where a delivery goes when the bridge stops trying."""

    def __init__(self, sqs: Any, dlq_url: str) -> None:
        self._sqs = sqs
        self.dlq_url = dlq_url

    def park(self, body: str, summary: ParkingSummary) -> str:
        # Loaded by the first message parked: a delivery's last failed attempt, or a message
        # that is not a task.
        from jobhooks.delivery.parking import park_delivery

        return park_delivery(self._sqs, self.dlq_url, body, summary)
