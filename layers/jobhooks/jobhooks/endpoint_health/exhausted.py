"""The `delivery.exhausted` rule: a delivery used its last attempt and was parked in the
delivery DLQ (replayable: `jobhooks dlq redrive`).

Once per exhaustion: the park is one conditional write on the delivery's record (a duplicate
task that parks it too is a `duplicate`), and the key holds the last attempt's time.

Never for a notification's own delivery: a tenant's notification endpoint that fails does not
beget notifications about its notifications, which would bounce between two broken endpoints
for ever. Its exhaustion is logged, and its endpoint's health counts it like any delivery, so
`endpoint.failing` and `endpoint.disabled` still say it is broken (once per state change).
"""

from __future__ import annotations

from typing import Any

from jobhooks.delivery.model import DeliveryOutcome, DeliveryResult, result_label
from jobhooks.delivery_task import DeliveryTask
from jobhooks.storage.times import format_timestamp
from jobhooks.subscriptions.model import NOTIFICATION_EVENT_TYPES


def is_notification(task: DeliveryTask) -> bool:
    return task.event_type in {kind.value for kind in NOTIFICATION_EVENT_TYPES}


def is_exhausted(outcome: DeliveryOutcome) -> bool:
    """Parked after an attempt: the last one (a disabled subscription parks with none)."""
    return outcome.result is DeliveryResult.PARKED and outcome.attempt is not None


def exhausted_data(task: DeliveryTask, outcome: DeliveryOutcome) -> dict[str, Any]:
    attempt = outcome.attempt
    assert attempt is not None
    return {
        "subscription_id": task.subscription_id,
        "delivery_id": task.delivery_id,
        "event_id": task.event_id,
        "event_type": task.event_type,
        "attempts": attempt.n,
        "last_result": result_label(attempt),
        "last_attempt_at": format_timestamp(attempt.at),
    }


def exhausted_key(task: DeliveryTask, outcome: DeliveryOutcome) -> str:
    attempt = outcome.attempt
    at = format_timestamp(attempt.at) if attempt is not None else "?"
    return f"{task.delivery_id}.exhausted.{at}"
