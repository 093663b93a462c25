"""What ingest puts on the delivery queue: a task, visible at once or after a delay.

Its own module because only ingest enqueues (its fan-out, its first attempts, re-fan-outs and
recovery): the deliver function reads tasks (`jobhooks.delivery_task`) and never builds a
delayed one, so its cold start does not define this class. `jobhooks.delivery_task` still
exports both names, on first use.
"""

from dataclasses import dataclass

from jobhooks.delivery_task import MAX_DELAY_SECONDS, DeliveryTask


@dataclass(frozen=True, slots=True)
class DelayedTask:
    """A task the deliver function must not see for `delay_seconds` (the message's SQS
    DelaySeconds, 0 to 900): a failed first attempt's task waits for the schedule's attempt 2."""

    task: DeliveryTask
    delay_seconds: int

    def __post_init__(self) -> None:
        if not 0 <= self.delay_seconds <= MAX_DELAY_SECONDS:
            raise ValueError(f"DelaySeconds is 0 to {MAX_DELAY_SECONDS}, not {self.delay_seconds}")


QueuedTask = DeliveryTask | DelayedTask
"""What ingest puts on the delivery queue: a task, visible at once or after a delay."""
