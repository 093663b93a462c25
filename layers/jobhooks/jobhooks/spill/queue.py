"""Ingest's side of the spill path: what it could not write, sent to the spill queue.

`SpillQueue.spill(...)` sends one message per chunk (`messages.spill_messages`) with
SendMessage (IngestRole may send to this queue and no other of the spill path); it raises
`SpillRefusedError` when SQS does not take one, after botocore's own retries. A chunk sent
before the refusal stays sent: its rows or pages are written twice at worst, which both
targets absorb (the outcomes view reads one row per `event_id`; a page put twice is the same
item).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobhooks.spill.exceptions import SpillRefusedError
from jobhooks.storage.clients import aws_error_code

if TYPE_CHECKING:
    from jobhooks.spill.messages import SpillMessage


class SpillQueue:
    """`sqs` is a boto3 SQS client; `queue_url` the spill queue's URL."""

    def __init__(self, queue_url: str, sqs: Any) -> None:
        self.queue_url = queue_url
        self._sqs = sqs

    def spill(self, spilled: SpillMessage) -> int:
        """Send `spilled`; the number of messages it took. Raises `SpillRefusedError`."""
        from botocore.exceptions import BotoCoreError, ClientError

        # Here, not at import: ingest builds this queue at every cold start and spills only
        # when a write after the webhooks failed.
        from jobhooks.spill.messages import SpilledRows, spill_messages

        kind = "analytics rows" if isinstance(spilled, SpilledRows) else "first-attempt pages"
        sent = 0
        for body in spill_messages(spilled):
            try:
                self._sqs.send_message(QueueUrl=self.queue_url, MessageBody=body)
            except (ClientError, BotoCoreError) as error:
                raise SpillRefusedError(kind, aws_error_code(error)) from error
            sent += 1
        return sent
