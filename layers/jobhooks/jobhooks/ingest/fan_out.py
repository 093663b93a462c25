"""Fan-out: one delivery task per matching subscription, onto the delivery queue.

Every task of an event carries the same payload (the webhook body, built once), and ids derived
from (event, subscription), so sending a task twice (a retried fan-out) produces the same
`delivery_id`, which the deliver side deduplicates. SendMessageBatch takes at most 10 entries
and can answer 200 with some entries failed, so failed entries are sent again a few times; if
any still fails the whole fan-out fails, and the caller releases its claim and retries.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final

from botocore.exceptions import ClientError

from jobhooks.delivery_task import DeliveryTask, delivery_task_for
from jobhooks.ingest.exceptions import AwsServiceError, DeliveryEnqueueError
from jobhooks.subscriptions.model import Subscription

MAX_BATCH_ENTRIES: Final = 10
# SQS takes at most 1 MiB per SendMessageBatch call (all entries together).
MAX_BATCH_BYTES: Final = 1_048_576 - 16_384
DEFAULT_SEND_ATTEMPTS: Final = 3
DEFAULT_BACKOFF_SECONDS: Final = 0.05


def delivery_tasks_for(
    *,
    event_id: str,
    tenant_id: str,
    event_type: str,
    payload: str,
    subscriptions: Iterable[Subscription],
    replay: bool = False,
) -> tuple[DeliveryTask, ...]:
    """One task per subscription; `replay` asks deliver to POST even after a recorded success."""
    tasks = []
    for subscription in subscriptions:
        # The store already filtered by tenant; a task for another tenant must never exist.
        if subscription.tenant_id != tenant_id:
            continue
        task = delivery_task_for(
            event_id=event_id,
            tenant_id=tenant_id,
            event_type=event_type,
            payload=payload,
            subscription_id=subscription.subscription_id,
        )
        tasks.append(task.model_copy(update={"replay": True}) if replay else task)
    return tuple(tasks)


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

    def enqueue(self, event_id: str, tasks: Sequence[DeliveryTask]) -> int:
        """Send every task; returns how many. Raises unless SQS accepted all of them."""
        for chunk in _chunks([(task, task.to_json()) for task in tasks]):
            self._send_chunk(event_id, chunk, total=len(tasks))
        return len(tasks)

    def _send_chunk(
        self, event_id: str, chunk: Sequence[tuple[DeliveryTask, str]], *, total: int
    ) -> None:
        pending = {str(n): body for n, (_, body) in enumerate(chunk)}
        code = "Unknown"
        for attempt in range(self._attempts):
            if attempt:
                self._sleep(self._backoff * 2 ** (attempt - 1))
            try:
                response = self._sqs.send_message_batch(
                    QueueUrl=self.queue_url,
                    Entries=[{"Id": id_, "MessageBody": body} for id_, body in pending.items()],
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
            pending = {id_: body for id_, body in pending.items() if id_ not in accepted}
            if not pending:
                return
        raise DeliveryEnqueueError(event_id, len(pending), total, code)


def _chunks(
    entries: Sequence[tuple[DeliveryTask, str]],
) -> Iterator[list[tuple[DeliveryTask, str]]]:
    chunk: list[tuple[DeliveryTask, str]] = []
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
