"""Dead-letter queues: what is parked there, and sending it back.

The delivery DLQ holds deliveries the deliver function gave up on (attempts exhausted, or a
disabled subscription); the ingest DLQ holds forwarded messages ingest failed on five times;
the spill DLQ holds analytics rows and first-attempt pages the spill function could not write
for about a day (jobhooks.spill). Their bodies are the original messages, so moving them back
to their source queue delivers (or ingests, or writes) them again.

Two ways to move them (`JOBHOOKS_DLQ_REDRIVE`, or `method` per call):

- `move_task`: SQS `StartMessageMoveTask`. SQS moves every message itself at a bounded rate
  and keeps going after this call returns; the answer is the task's handle.
- `resend`: receive, send to the source queue, delete, in batches of ten, for local emulators
  that lack message-move tasks (moto). A message is deleted only after the source queue
  accepted it, so a failure part-way leaves it parked, never lost (at worst it is sent twice,
  which the deliver and ingest sides deduplicate). It stops after the messages that were
  waiting when it began, so a delivery that fails and is parked again is not resent in a loop,
  and within a time budget that fits the API function's timeout.

Listing peeks: the messages it receives are handed straight back (visibility 0).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from jobhooks.management.context import ManagementContext
from jobhooks.management.exceptions import ManagementMisconfiguredError, RedriveUnavailableError
from jobhooks.management.operator_models import (
    DeadLetterListing,
    DeadLetterQueue,
    MoveTaskView,
    ParkedMessage,
    RedriveRequest,
    RedriveResult,
)
from jobhooks.management.settings import RedriveMethod
from jobhooks.storage.times import format_time

SQS_BATCH: Final = 10
# Long enough to send a batch back before SQS would hand the same messages to someone else.
RESEND_VISIBILITY_SECONDS: Final = 60
PEEK_VISIBILITY_SECONDS: Final = 30
# The API function has 15 s; what is left over stays parked for the next call.
RESEND_BUDGET_SECONDS: Final = 10.0


def list_dlq(
    context: ManagementContext, queue: DeadLetterQueue, *, limit: int
) -> DeadLetterListing:
    dlq_url, _ = _queues(context, queue)
    attributes = context.sqs.get_queue_attributes(
        QueueUrl=dlq_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return DeadLetterListing(
        queue=queue,
        approximate_count=int(attributes.get("ApproximateNumberOfMessages", 0)),
        approximate_in_flight=int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
        messages=[parked_message(queue, message) for message in _peek(context.sqs, dlq_url, limit)],
        move_task=(
            _latest_move_task(context.sqs, _queue_arn(context.sqs, dlq_url))
            if context.redrive_method is RedriveMethod.MOVE_TASK
            else None
        ),
    )


def redrive_dlq(
    context: ManagementContext,
    request: RedriveRequest,
    *,
    monotonic: Callable[[], float] = time.monotonic,
) -> RedriveResult:
    method = context.redrive_method
    if request.method is not None and request.method is not RedriveMethod.AUTO:
        method = request.method
    dlq_url, source_url = _queues(context, request.queue)
    if method is RedriveMethod.MOVE_TASK:
        handle = start_move_task(context.sqs, request.queue, dlq_url, source_url)
        return RedriveResult(queue=request.queue, method=method.value, task_handle=handle)
    moved, remaining = resend_parked(
        context.sqs,
        dlq_url,
        source_url,
        max_messages=request.max_messages,
        deadline=monotonic() + RESEND_BUDGET_SECONDS,
        monotonic=monotonic,
    )
    return RedriveResult(queue=request.queue, method=method.value, moved=moved, remaining=remaining)


def start_move_task(sqs: Any, queue: DeadLetterQueue, dlq_url: str, source_url: str) -> str:
    """SQS moves the DLQ's messages back to `source_url` itself; the task handle."""
    from botocore.exceptions import ClientError  # loaded with the SQS client by now

    try:
        response = sqs.start_message_move_task(
            SourceArn=_queue_arn(sqs, dlq_url), DestinationArn=_queue_arn(sqs, source_url)
        )
    except ClientError as error:
        # One task per queue at a time, and an emulator may lack the API altogether.
        aws_code = str(error.response.get("Error", {}).get("Code", "Unknown"))
        raise RedriveUnavailableError(queue.value, aws_code) from None
    return str(response["TaskHandle"])


def resend_parked(
    sqs: Any,
    dlq_url: str,
    source_url: str,
    *,
    max_messages: int | None = None,
    deadline: float | None = None,
    monotonic: Callable[[], float] = time.monotonic,
) -> tuple[int, int]:
    """Move messages back by receive, send, delete; (moved, still waiting in the DLQ)."""
    waiting = _approximate_count(sqs, dlq_url)
    budget = waiting if max_messages is None else min(waiting, max_messages)
    moved = 0
    while moved < budget and (deadline is None or monotonic() < deadline):
        messages = sqs.receive_message(
            QueueUrl=dlq_url,
            MaxNumberOfMessages=min(SQS_BATCH, budget - moved),
            VisibilityTimeout=RESEND_VISIBILITY_SECONDS,
            WaitTimeSeconds=0,
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not messages:
            break
        moved += _send_back(sqs, dlq_url, source_url, messages)
    return moved, _approximate_count(sqs, dlq_url)


def parked_message(queue: DeadLetterQueue, message: Mapping[str, Any]) -> ParkedMessage:
    """What a parked message is about, read from its body; never the payload itself."""
    # The codecs of parked messages load with the first DLQ listing, not with the API.
    from jobhooks.delivery.parking import ParkingSummary
    from jobhooks.delivery_task import DeliveryTask, InvalidDeliveryTaskError
    from jobhooks.ingest.inbound import claimed_event_id

    body = str(message.get("Body", ""))
    attributes = message.get("Attributes") or {}
    sent = attributes.get("SentTimestamp")
    received = attributes.get("ApproximateReceiveCount")
    fields: dict[str, Any] = {
        "message_id": str(message.get("MessageId", "")),
        "sent_at": (
            format_time(datetime.fromtimestamp(int(str(sent)) / 1000, UTC))
            if str(sent).isdigit()
            else None
        ),
        "receive_count": int(str(received)) if str(received).isdigit() else None,
        "size_bytes": len(body.encode("utf-8")),
    }
    if queue is DeadLetterQueue.DELIVERY:
        try:
            task = DeliveryTask.from_json(body)
        except InvalidDeliveryTaskError:
            pass
        else:
            fields.update(
                delivery_id=task.delivery_id,
                event_id=task.event_id,
                subscription_id=task.subscription_id,
                tenant_id=task.tenant_id,
                event_type=task.event_type,
            )
        summary = ParkingSummary.from_message_attributes(message.get("MessageAttributes") or {})
        if summary is not None:
            fields.update(
                park_reason=summary.reason.value,
                attempts=summary.attempts,
                last_result=summary.last_result,
            )
    elif queue is DeadLetterQueue.SPILL:
        fields.update(_spilled(body))
    else:
        fields["event_id"] = claimed_event_id(body)
    return ParkedMessage.model_validate(fields)


def _spilled(body: str) -> dict[str, Any]:
    """What a parked spill message holds: its kind and how many rows or pages."""
    from jobhooks.spill.exceptions import SpilledMessageInvalidError
    from jobhooks.spill.messages import SpilledRows, SpillKind, read_spill_message

    try:
        spilled = read_spill_message(body)
    except SpilledMessageInvalidError:
        return {}
    if isinstance(spilled, SpilledRows):
        return {"spill_kind": SpillKind.ANALYTICS_ROWS.value, "spilled_items": len(spilled.rows)}
    return {"spill_kind": SpillKind.FIRST_ATTEMPT_PAGES.value, "spilled_items": len(spilled.pages)}


# -- internals -------------------------------------------------------------------------------


def _queues(context: ManagementContext, queue: DeadLetterQueue) -> tuple[str, str]:
    settings = context.settings
    if queue is DeadLetterQueue.DELIVERY:
        return settings.delivery_dlq_url, settings.delivery_queue_url
    if queue is DeadLetterQueue.SPILL:
        if not (settings.spill_dlq_url and settings.spill_queue_url):
            raise ManagementMisconfiguredError(
                "JOBHOOKS_SPILL_DLQ_URL and JOBHOOKS_SPILL_QUEUE_URL are needed for the spill "
                "queue (set them as template.yaml does)"
            )
        return settings.spill_dlq_url, settings.spill_queue_url
    return settings.ingest_dlq_url, settings.ingest_queue_url


def _queue_arn(sqs: Any, queue_url: str) -> str:
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
    return str(attributes["Attributes"]["QueueArn"])


def _approximate_count(sqs: Any, queue_url: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes.get("ApproximateNumberOfMessages", 0))


def _peek(sqs: Any, queue_url: str, limit: int) -> list[dict[str, Any]]:
    peeked: list[dict[str, Any]] = []
    try:
        while len(peeked) < limit:
            batch = sqs.receive_message(
                QueueUrl=queue_url,
                MaxNumberOfMessages=min(SQS_BATCH, limit - len(peeked)),
                VisibilityTimeout=PEEK_VISIBILITY_SECONDS,
                WaitTimeSeconds=0,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not batch:
                break
            peeked.extend(batch)
    finally:
        _hand_back(sqs, queue_url, peeked)
    return peeked


def _hand_back(sqs: Any, queue_url: str, messages: Sequence[Mapping[str, Any]]) -> None:
    for start in range(0, len(messages), SQS_BATCH):
        chunk = messages[start : start + SQS_BATCH]
        sqs.change_message_visibility_batch(
            QueueUrl=queue_url,
            Entries=[
                {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
                for n, m in enumerate(chunk)
            ],
        )


def _send_back(
    sqs: Any, dlq_url: str, source_url: str, messages: Sequence[Mapping[str, Any]]
) -> int:
    response = sqs.send_message_batch(
        QueueUrl=source_url,
        Entries=[
            {
                "Id": str(n),
                "MessageBody": message["Body"],
                "MessageAttributes": _sendable_attributes(message.get("MessageAttributes") or {}),
            }
            for n, message in enumerate(messages)
        ],
    )
    sent = {entry["Id"] for entry in response.get("Successful", [])}
    delivered = [m for n, m in enumerate(messages) if str(n) in sent]
    if delivered:
        sqs.delete_message_batch(
            QueueUrl=dlq_url,
            Entries=[
                {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(delivered)
            ],
        )
    # What the source queue refused stays parked, visible again for the next redrive.
    _hand_back(sqs, dlq_url, [m for n, m in enumerate(messages) if str(n) not in sent])
    return len(delivered)


def _sendable_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """ReceiveMessage's attribute shape -> SendMessage's (empty list fields are refused)."""
    sendable: dict[str, Any] = {}
    for name, value in attributes.items():
        entry = {"DataType": value["DataType"]}
        if "StringValue" in value:
            entry["StringValue"] = value["StringValue"]
        if "BinaryValue" in value:
            entry["BinaryValue"] = value["BinaryValue"]
        sendable[name] = entry
    return sendable


def _latest_move_task(sqs: Any, dlq_arn: str) -> MoveTaskView | None:
    from botocore.exceptions import ClientError  # loaded with the SQS client by now

    try:
        results = sqs.list_message_move_tasks(SourceArn=dlq_arn, MaxResults=1).get("Results", [])
    except ClientError:
        return None
    if not results:
        return None
    task = results[0]
    started = task.get("StartedTimestamp")
    return MoveTaskView(
        status=str(task.get("Status", "UNKNOWN")),
        moved=task.get("ApproximateNumberOfMessagesMoved"),
        to_move=task.get("ApproximateNumberOfMessagesToMove"),
        started_at=(
            format_time(datetime.fromtimestamp(int(started) / 1000, UTC))
            if started is not None
            else None
        ),
        failure_reason=task.get("FailureReason"),
    )
