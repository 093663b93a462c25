"""Events: replaying one event to its tenant's current subscriptions, and events nobody wanted.

A replay re-fans the event out from the webhook body its record keeps (the dedup retention), to
the subscriptions that want it *now*: one added after the event arrived gets it too. The tasks
carry `replay: true`, so a subscription that already received the event receives it again.
"""

from __future__ import annotations

from jobhooks.ingest.exceptions import EventNotFoundError
from jobhooks.management.context import ManagementContext
from jobhooks.management.models import ReplayedDelivery
from jobhooks.management.operator_models import EventReplay, UnmatchedEvent, UnmatchedEventPage
from jobhooks.storage.times import format_time


def replay_event(
    context: ManagementContext, event_id: str, *, tenant_id: str | None = None
) -> EventReplay:
    # The delivery task's ids load with the first replay, not with the API.
    from jobhooks.delivery_task import delivery_id_for
    from jobhooks.webhook_signature import webhook_id_for

    record = context.claims.get_done(event_id)
    if tenant_id is not None and record.tenant_id != tenant_id:
        raise EventNotFoundError(event_id)
    result = context.ingest.refan_out(event_id, replay=True)
    return EventReplay(
        event_id=record.event_id,
        tenant_id=record.tenant_id,
        event_type=record.event_type,
        deliveries=[
            ReplayedDelivery(
                delivery_id=delivery_id_for(record.event_id, subscription_id),
                event_id=record.event_id,
                subscription_id=subscription_id,
                webhook_id=webhook_id_for(record.event_id),
            )
            for subscription_id in result.subscription_ids
        ],
    )


def list_unmatched_events(
    context: ManagementContext, tenant_id: str, *, limit: int, cursor: str | None = None
) -> UnmatchedEventPage:
    page = context.claims.list_unmatched(tenant_id, limit=limit, cursor=cursor)
    return UnmatchedEventPage(
        events=[
            UnmatchedEvent(
                event_id=record.event_id,
                tenant_id=record.tenant_id,
                event_type=record.event_type,
                job_id=record.job_id,
                done_at=format_time(record.done_at) if record.done_at else None,
                expires_at=format_time(record.expires_at),
            )
            for record in page.events
        ],
        next_cursor=page.next_cursor,
    )
