"""Routes of /v1/events: replay one event to today's subscriptions, events nobody wanted."""

from __future__ import annotations

from http import HTTPStatus

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from aws_lambda_powertools.metrics import MetricUnit

from jobhooks.management import events
from jobhooks.management.openapi import (
    CursorQuery,
    EventIdPath,
    LimitQuery,
    TenantQuery,
    TenantScopeQuery,
    documented,
)
from jobhooks.management.operator_models import EventReplay, UnmatchedEventPage
from jobhooks.management.routes.dependencies import CallerOf, Context, Sends
from jobhooks.management.scoping import event_scope, named_tenant
from jobhooks.storage.pages import DEFAULT_PAGE_SIZE

OK, ACCEPTED = HTTPStatus.OK, HTTPStatus.ACCEPTED
NOT_FOUND, CONFLICT = HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT
TAGS = ["events"]

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]
logger = Logger(child=True)
metrics = Metrics()


@router.post(
    "/v1/events/<event_id>/replay",
    operation_id="replay_event",
    summary="Deliver an event again to every subscription that wants it now",
    status_code=ACCEPTED,
    responses=documented(ACCEPTED, EventReplay, NOT_FOUND, CONFLICT, HTTPStatus.TOO_MANY_REQUESTS),
    tags=TAGS,
)
def handle_replay_event(
    event_id: EventIdPath,
    context: Context,
    caller: CallerOf,
    sends: Sends,
    tenant_id: TenantScopeQuery = None,
) -> EventReplay:
    scope = event_scope(context, caller, event_id, tenant_id)
    sends.take(caller, scope)
    replayed = events.replay_event(context, event_id, tenant_id=scope)
    logger.info(
        "event replayed", extra={"event_id": event_id, "deliveries": len(replayed.deliveries)}
    )
    metrics.add_metric(name="EventsReplayed", unit=MetricUnit.Count, value=1)
    return replayed


@router.get(
    "/v1/events/unmatched",
    operation_id="list_unmatched_events",
    summary="A tenant's events that no subscription wanted, newest first",
    responses=documented(OK, UnmatchedEventPage, NOT_FOUND),
    tags=TAGS,
)
def handle_list_unmatched_events(
    tenant_id: TenantQuery,
    context: Context,
    caller: CallerOf,
    limit: LimitQuery = DEFAULT_PAGE_SIZE,
    cursor: CursorQuery = None,
) -> UnmatchedEventPage:
    tenant = named_tenant(caller, tenant_id)
    return events.list_unmatched_events(context, tenant, limit=limit, cursor=cursor)
