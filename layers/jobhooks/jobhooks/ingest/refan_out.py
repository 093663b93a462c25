"""An operator's re-fan-out: a done event's stored payload, enqueued again to its tenant's
subscriptions as they are now (`POST /v1/events/{event_id}/replay`).

Subscriptions that already received it are skipped by the deliver side (same `delivery_id`)
unless `replay` asks for a new POST. The claim records the new fan-out; no analytics row is
written (the event has one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobhooks.ingest.exceptions import EventNotFoundError
from jobhooks.ingest.fan_out import delivery_tasks_for, job_name_of

if TYPE_CHECKING:
    from jobhooks.ingest.ports import DeliveryTasks, EventClaims, SubscriptionMatcher
    from jobhooks.ingest.reads import FanOutResult


def refan_out(
    event_id: str,
    *,
    claims: EventClaims,
    subscriptions: SubscriptionMatcher,
    deliveries: DeliveryTasks,
    replay: bool = False,
) -> FanOutResult:
    """Raises `EventNotFoundError` or `EventInProgressError`."""
    # Here, not at import: the ingest function imports this module with its service and never
    # re-fans out (the management API does).
    from jobhooks.ingest.reads import FanOutResult

    record = claims.get_done(event_id)
    if record.payload is None:  # not written by this code: nothing to re-send
        raise EventNotFoundError(event_id)
    tasks = delivery_tasks_for(
        event_id=record.event_id,
        tenant_id=record.tenant_id,
        event_type=record.event_type,
        payload=record.payload or "",
        subscriptions=subscriptions.matching(record.tenant_id, record.event_type),
        job_name=job_name_of(record.payload),
        replay=replay,
    )
    if tasks:
        deliveries.enqueue(record.event_id, tasks)
    claims.record_fan_out(
        record, matched=len(tasks), subscription_ids=[task.subscription_id for task in tasks]
    )
    return FanOutResult(record.event_id, len(tasks), tuple(task.subscription_id for task in tasks))
