"""Parking and replay: where a delivery goes when the bridge stops trying, and how it comes back.

The deliver function parks a delivery itself, in the delivery DLQ, when its last attempt fails
(or its subscription is disabled, or the message is not a delivery task at all): the message
body is the task exactly as it arrived, so moving it back to the delivery queue (`jobhooks dlq
redrive`, SQS StartMessageMoveTask) delivers it again. The queue's redrive policy is only a
safety net for invocations that crash every time.

Three message attributes say why, so `jobhooks dlq list` can show it without parsing bodies
(SQS allows ten; a redrive keeps them). A replay of a delivery that already succeeded is a new
task with `replay: true`, sent to the delivery queue with `enqueue_delivery`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from jobhooks.delivery_task import DeliveryTask

REASON_ATTRIBUTE: Final = "jobhooks-park-reason"
ATTEMPTS_ATTRIBUTE: Final = "jobhooks-attempts"
LAST_RESULT_ATTRIBUTE: Final = "jobhooks-last-result"
_MAX_LAST_RESULT_CHARS: Final = 64


class ParkReason(StrEnum):
    ATTEMPTS_EXHAUSTED = "attempts_exhausted"
    SUBSCRIPTION_DISABLED = "subscription_disabled"
    INVALID_TASK = "invalid_task"


@dataclass(frozen=True)
class ParkingSummary:
    """Why a message is in the delivery DLQ: the reason, attempts made, the last result."""

    reason: ParkReason
    attempts: int
    last_result: str | None = None
    """`http_500`, `timeout`, ...: a failure class or status, never a response body."""

    def message_attributes(self) -> dict[str, dict[str, str]]:
        attributes = {
            REASON_ATTRIBUTE: {"DataType": "String", "StringValue": self.reason.value},
            ATTEMPTS_ATTRIBUTE: {"DataType": "Number", "StringValue": str(self.attempts)},
        }
        if self.last_result:
            attributes[LAST_RESULT_ATTRIBUTE] = {
                "DataType": "String",
                "StringValue": self.last_result[:_MAX_LAST_RESULT_CHARS],
            }
        return attributes

    @classmethod
    def from_message_attributes(cls, attributes: Mapping[str, Any]) -> ParkingSummary | None:
        """Read back from ReceiveMessage's `MessageAttributes`; None for an unlabelled message
        (one the redrive policy moved after repeated crashes)."""
        reason = _attribute(attributes, REASON_ATTRIBUTE)
        if reason is None or reason not in ParkReason.__members__.values():
            return None
        attempts = _attribute(attributes, ATTEMPTS_ATTRIBUTE)
        return cls(
            reason=ParkReason(reason),
            attempts=int(attempts) if attempts and attempts.isdigit() else 0,
            last_result=_attribute(attributes, LAST_RESULT_ATTRIBUTE),
        )


def park_delivery(sqs: Any, dlq_url: str, body: str, summary: ParkingSummary) -> str:
    """Send `body` (the task as it arrived) to the delivery DLQ; the new message's id."""
    response = sqs.send_message(
        QueueUrl=dlq_url, MessageBody=body, MessageAttributes=summary.message_attributes()
    )
    return str(response["MessageId"])


def replay_task(task: DeliveryTask) -> DeliveryTask:
    """The same delivery, marked to be POSTed even though a success is recorded."""
    return task.model_copy(update={"replay": True})


def enqueue_delivery(sqs: Any, queue_url: str, task: DeliveryTask) -> str:
    """Put a task on the delivery queue; a replay: `enqueue_delivery(sqs, url, replay_task(t))`.

    The task's payload must be the exact webhook body; the management API takes it from the
    parked message or from the event's claim (`ClaimsTable.payload`).
    """
    response = sqs.send_message(QueueUrl=queue_url, MessageBody=task.to_json())
    return str(response["MessageId"])


def _attribute(attributes: Mapping[str, Any], name: str) -> str | None:
    value = attributes.get(name)
    if not isinstance(value, Mapping):
        return None
    # ReceiveMessage spells it StringValue; a Lambda SQS record spells it stringValue.
    text = value.get("StringValue", value.get("stringValue"))
    return str(text) if text is not None else None
