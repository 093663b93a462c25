"""When the local event source calls a queue idle: never while a failed record is about to come
back, whatever moment its visibility timeout ends at.

moto answers GetQueueAttributes by evaluating the queue once per attribute asked, each at its own
moment; `StepQueue` does the same with a clock that moves one step per evaluation, so every
moment a record's visibility can end at, between two counts included, is tried.
"""

from __future__ import annotations

from typing import Any

import pytest
from jobhooks_tools.local.event_source import SqsEventSource

QUEUE_URL = "http://local/000000000000/jobs"


class StepQueue:
    """One in-flight message that becomes visible when the clock reaches `visible_at`."""

    def __init__(self, visible_at: int) -> None:
        self.clock = 0
        self.visible_at = visible_at
        self.state = "in_flight"

    def _tick(self) -> str:
        self.clock += 1
        if self.state == "in_flight" and self.clock >= self.visible_at:
            self.state = "visible"
        return self.state

    def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> dict[str, Any]:
        if "QueueArn" in AttributeNames:
            arn = "arn:aws:sqs:us-east-1:000000000000:jobs"
            return {"Attributes": {"QueueArn": arn, "VisibilityTimeout": "30"}}
        counts = {
            "ApproximateNumberOfMessages": "visible",
            "ApproximateNumberOfMessagesNotVisible": "in_flight",
            "ApproximateNumberOfMessagesDelayed": "delayed",
        }
        return {
            "Attributes": {name: str(int(self._tick() == counts[name])) for name in AttributeNames}
        }

    def receive_message(self, **_: Any) -> dict[str, Any]:
        if self._tick() != "visible":
            return {"Messages": []}
        self.state = "received"
        return {"Messages": [{"MessageId": "m1", "ReceiptHandle": "r1", "Body": "retry me"}]}

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict[str, str]]) -> dict[str, Any]:
        self.state = "deleted"
        return {"Successful": [{"Id": entry["Id"]} for entry in Entries], "Failed": []}


@pytest.mark.parametrize("visible_at", range(1, 12))
def test_a_record_coming_back_during_the_idle_check_is_processed_before_idle(
    visible_at: int,
) -> None:
    queue = StepQueue(visible_at)
    handled: list[str] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        handled.extend(record["body"] for record in event["Records"])
        return {"batchItemFailures": []}

    source = SqsEventSource(
        QUEUE_URL, handler, sqs_client=queue, wait_time_seconds=0, function_timeout_seconds=1
    )
    stats = source.run_until_idle(5, include_in_flight=True)

    assert (stats.received, handled, queue.state) == (1, ["retry me"], "deleted")
