"""Deliveries: the attempt history per subscription and per event, and replaying one delivery.

A delivery is read through `jobhooks.delivery.history`, which finds it in a first-attempt page
(its first attempt, made by ingest, succeeded) or in the attempt log (anything else), or both.
Neither holds the webhook body; a replay takes it from the event's record in the claims table.
A replayed task carries `replay: true`, so the deliver function POSTs it even after a success
(recorded or in a page), under the same `webhook-id` (receivers deduplicate on it).

An event's deliveries are found from the subscriptions its claim records (`subscription_ids`):
their delivery ids are derived, so no index of the deliveries table is needed. Claims are kept
at least as long as deliveries (30 days); claims completed before the ids were recorded have
none, nor do records that outlive their claim (retries that ran for days); then the tenant's
current subscriptions stand in for them, which misses only the deliveries of a subscription
deleted since.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobhooks.ingest.exceptions import EventNotFoundError
from jobhooks.management.context import ManagementContext
from jobhooks.management.exceptions import EventPayloadUnavailableError, InvalidDeliveryFilterError
from jobhooks.management.models import (
    AttemptView,
    DeliveryDetail,
    DeliveryPage,
    DeliverySummary,
    ReplayedDelivery,
)
from jobhooks.storage.pages import MAX_PAGE_SIZE
from jobhooks.storage.times import format_time

if TYPE_CHECKING:
    from jobhooks.delivery.model import DeliveryAttempt, DeliveryRecord


def list_deliveries(
    context: ManagementContext,
    *,
    subscription_id: str | None = None,
    event_id: str | None = None,
    tenant_id: str | None = None,
    limit: int,
    cursor: str | None = None,
) -> DeliveryPage:
    if (subscription_id is None) == (event_id is None):
        raise InvalidDeliveryFilterError()
    if subscription_id is not None:
        page = context.delivery_history.list_by_subscription(
            subscription_id, tenant_id=tenant_id, limit=limit, cursor=cursor
        )
    else:
        assert event_id is not None
        page = context.delivery_history.list_by_event(
            event_id,
            subscription_ids=event_subscription_ids(context, event_id, tenant_id=tenant_id),
            tenant_id=tenant_id,
            limit=limit,
            cursor=cursor,
        )
    return DeliveryPage(
        deliveries=[delivery_summary(record) for record in page.deliveries],
        next_cursor=page.next_cursor,
    )


def event_subscription_ids(
    context: ManagementContext, event_id: str, *, tenant_id: str | None = None
) -> tuple[str, ...]:
    """The subscriptions whose deliveries of `event_id` may exist (module docstring)."""
    record = context.claims.get(event_id)
    if record is not None:
        if tenant_id is not None and record.tenant_id != tenant_id:
            return ()
        if record.subscription_ids is not None:
            return record.subscription_ids
        tenant_id = record.tenant_id
    if not tenant_id:
        return ()  # no claim and no tenant: nothing to derive the delivery ids from
    found: list[str] = []
    cursor: str | None = None
    while True:
        page = context.subscriptions.list_by_tenant(tenant_id, limit=MAX_PAGE_SIZE, cursor=cursor)
        found.extend(subscription.subscription_id for subscription in page.subscriptions)
        cursor = page.next_cursor
        if cursor is None:
            return tuple(found)


def get_delivery(
    context: ManagementContext, delivery_id: str, *, tenant_id: str | None = None
) -> DeliveryDetail:
    record = context.delivery_history.get(delivery_id, tenant_id=tenant_id)
    return DeliveryDetail(
        **delivery_summary(record).model_dump(),
        attempts=[attempt_view(attempt) for attempt in record.attempts],
    )


def replay_delivery(
    context: ManagementContext, delivery_id: str, *, tenant_id: str | None = None
) -> ReplayedDelivery:
    """Enqueue the delivery again with `replay: true`, whatever its status."""
    # The delivery task codec loads with the first replay, not with the API.
    from jobhooks.delivery.parking import enqueue_delivery, replay_task
    from jobhooks.delivery_task import delivery_task_for

    record = context.delivery_history.get(delivery_id, tenant_id=tenant_id)
    # A deleted subscription would only turn the replay into a `failed` record: say so now.
    context.subscriptions.get(record.subscription_id, tenant_id=record.tenant_id)
    try:
        event = context.claims.get_done(record.event_id)
    except EventNotFoundError:
        raise EventPayloadUnavailableError(record.event_id) from None
    if event.payload is None:
        raise EventPayloadUnavailableError(record.event_id)
    task = replay_task(
        delivery_task_for(
            event_id=record.event_id,
            tenant_id=record.tenant_id,
            event_type=record.event_type,
            payload=event.payload,
            subscription_id=record.subscription_id,
        )
    )
    enqueue_delivery(context.sqs, context.settings.delivery_queue_url, task)
    return ReplayedDelivery(
        delivery_id=task.delivery_id,
        event_id=task.event_id,
        subscription_id=task.subscription_id,
        webhook_id=task.webhook_id,
    )


def delivery_summary(record: DeliveryRecord) -> DeliverySummary:
    last = record.last_attempt
    return DeliverySummary(
        delivery_id=record.delivery_id,
        event_id=record.event_id,
        webhook_id=record.webhook_id,
        subscription_id=record.subscription_id,
        tenant_id=record.tenant_id,
        event_type=record.event_type,
        status=record.status.value,
        status_reason=record.status_reason,
        attempt_count=record.attempt_count,
        created_at=format_time(record.created_at),
        updated_at=format_time(record.updated_at),
        last_attempt=attempt_view(last) if last is not None else None,
    )


def attempt_view(attempt: DeliveryAttempt) -> AttemptView:
    return AttemptView(
        n=attempt.n,
        at=format_time(attempt.at),
        status_code=attempt.status_code,
        error=attempt.error,
        latency_ms=attempt.latency_ms,
        response=attempt.response or None,
    )
