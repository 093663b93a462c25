"""A record whose event another invocation is still processing comes back when that lease ends.

Copies of one event race each other all the time (the producer's outbox relay and its repairer
re-emit every 30 s until a publish is recorded). The copy that loses the claim must be retried,
not acked: the winner may still die. Left to SQS, it would come back only after the ingest
queue's visibility timeout (six times the function timeout, 240 s); the winner's lease usually
ends within seconds, so the record is made visible again just after it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from jobhooks.storage.times import utc_now

# One second past the lease, so the retry finds the claim done or free rather than busy.
MARGIN_SECONDS: Final = 1
# SQS's own limit for a visibility change is 12 h; a lease is never longer than 15 min.
MAX_DELAY_SECONDS: Final = 900


class BusyRecords:
    """Shortens the visibility of records whose claim is busy; best effort."""

    def __init__(
        self, queue_url: str, sqs: Any, *, clock: Callable[[], datetime] | None = None
    ) -> None:
        self.queue_url = queue_url
        self._sqs = sqs
        self._clock = clock or utc_now

    def retry_after_lease(self, receipt_handle: str, lease_until_ms: int) -> int | None:
        """Make the record visible again just after the lease; the delay set, or None.

        A failure here changes nothing that matters: the record still comes back after the
        queue's visibility timeout.
        """
        now_ms = self._clock().timestamp() * 1000
        delay = math.ceil(max(lease_until_ms - now_ms, 0) / 1000) + MARGIN_SECONDS
        delay = min(delay, MAX_DELAY_SECONDS)
        try:
            self._sqs.change_message_visibility(
                QueueUrl=self.queue_url, ReceiptHandle=receipt_handle, VisibilityTimeout=delay
            )
        except (BotoCoreError, ClientError):
            return None
        return delay
