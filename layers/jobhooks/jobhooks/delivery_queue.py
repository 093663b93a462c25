"""The delivery queue's sender: delivery tasks onto SQS, in shared batches.

Its own module, beside the task it sends (`jobhooks.delivery_task`), because three capabilities
enqueue and none of them may depend on another: ingest (its fan-out and its first attempts'
retries), the management API (replays, re-fan-outs, recovery) and notifications.

SendMessageBatch takes at most 10 entries and can answer 200 with some entries failed, so failed
entries are sent again a few times; if any of an event's tasks still fails, that event's send
fails (`DeliveryEnqueueError`), and ingest releases its claim and retries the record. The tasks
of all the events of an ingest invocation share batches.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

from jobhooks.delivery_task import DeliveryTask
from jobhooks.exceptions import JobhooksError
from jobhooks.storage.exceptions import AwsServiceError

if TYPE_CHECKING:
    # A delayed task is a failed first attempt's retry: the module loads with the first one.
    from jobhooks.queued_task import QueuedTask

MAX_BATCH_ENTRIES: Final = 10
# SQS takes at most 1 MiB per SendMessageBatch call (all entries together).
MAX_BATCH_BYTES: Final = 1_048_576 - 16_384
DEFAULT_SEND_ATTEMPTS: Final = 3
DEFAULT_BACKOFF_SECONDS: Final = 0.05


class DeliveryEnqueueError(JobhooksError):
    """SQS did not accept every delivery task after a few attempts."""

    code = "delivery_enqueue_failed"

    def __init__(self, event_id: str, failed: int, total: int, aws_code: str) -> None:
        super().__init__(
            f"{failed} of {total} delivery tasks of event {event_id!r} were not accepted by SQS "
            f"({aws_code}); the claim is released and the record retried"
        )
        self.event_id = event_id
        self.failed = failed
        self.total = total
        self.aws_code = aws_code


class DeliveryQueue:
    """Sends delivery tasks to the delivery queue. `sqs` is a boto3 SQS client."""

    def __init__(
        self,
        queue_url: str,
        sqs: Any,
        *,
        attempts: int = DEFAULT_SEND_ATTEMPTS,
        backoff_seconds: float = DEFAULT_BACKOFF_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.queue_url = queue_url
        self._sqs = sqs
        self._attempts = max(1, attempts)
        self._backoff = backoff_seconds
        self._sleep = sleep

    def enqueue(self, event_id: str, tasks: Sequence[QueuedTask]) -> int:
        """Send every task; returns how many. Raises unless SQS accepted all of them."""
        failed = self.enqueue_events([(event_id, tasks)])
        if failed:
            raise failed[event_id]
        return len(tasks)

    def enqueue_events(
        self, events: Sequence[tuple[str, Sequence[QueuedTask]]]
    ) -> dict[str, Exception]:
        """Send the tasks of several events in shared batches; the events not fully accepted.

        An ingest invocation's events share `SendMessageBatch` calls (10 tasks a call, whichever
        event each belongs to) rather than one call per event: a batch of ten events with two
        subscriptions each is 2 calls, not 10. A `DelayedTask` carries its own `DelaySeconds`.
        """
        entries = [_entry(event_id, task) for event_id, tasks in events for task in tasks]
        totals = {event_id: len(tasks) for event_id, tasks in events}
        refused: dict[str, int] = {}
        errors: dict[str, Exception] = {}
        for chunk in _chunks(entries):
            try:
                not_sent, code = self._send_chunk(chunk)
            except AwsServiceError as error:
                for event_id, _, _ in chunk:
                    errors.setdefault(event_id, error)
                continue
            for event_id, _, _ in not_sent:
                refused[event_id] = refused.get(event_id, 0) + 1
            for event_id, count in refused.items():
                errors.setdefault(
                    event_id, DeliveryEnqueueError(event_id, count, totals[event_id], code)
                )
        return errors

    def _send_chunk(self, chunk: Sequence[_Entry]) -> tuple[list[_Entry], str]:
        """Send one batch, again for its refused entries; those still refused, and SQS's code."""
        pending = {str(n): entry for n, entry in enumerate(chunk)}
        code = "Unknown"
        for attempt in range(self._attempts):
            if attempt:
                self._sleep(self._backoff * 2 ** (attempt - 1))
            try:
                response = self._sqs.send_message_batch(
                    QueueUrl=self.queue_url,
                    Entries=[
                        {"Id": id_, "MessageBody": entry[1], "DelaySeconds": entry[2]}
                        if entry[2]
                        else {"Id": id_, "MessageBody": entry[1]}
                        for id_, entry in pending.items()
                    ],
                )
            except ClientError as error:
                # botocore already retried the call itself (throttling, 5xx).
                raise AwsServiceError.from_client_error(
                    "SendMessageBatch (deliveries)", error
                ) from error
            accepted = {entry["Id"] for entry in response.get("Successful", [])}
            failures = response.get("Failed", [])
            if failures:
                code = str(failures[0].get("Code", "Unknown"))
            # An entry SQS reports in neither list was not accepted either.
            pending = {id_: entry for id_, entry in pending.items() if id_ not in accepted}
            if not pending:
                return [], code
        return list(pending.values()), code


# (event id, message body, DelaySeconds)
_Entry = tuple[str, str, int]


def _entry(event_id: str, queued: QueuedTask) -> _Entry:
    if isinstance(queued, DeliveryTask):
        return event_id, queued.to_json(), 0
    return event_id, queued.task.to_json(), queued.delay_seconds


def _chunks(entries: Sequence[_Entry]) -> Iterator[list[_Entry]]:
    chunk: list[_Entry] = []
    size = 0
    for entry in entries:
        entry_size = len(entry[1].encode("utf-8"))
        if chunk and (len(chunk) == MAX_BATCH_ENTRIES or size + entry_size > MAX_BATCH_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(entry)
        size += entry_size
    if chunk:
        yield chunk
