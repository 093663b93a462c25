"""Routes of /v1/deliveries: a subscription's or an event's deliveries, one delivery, replay."""

from __future__ import annotations

from http import HTTPStatus

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from aws_lambda_powertools.metrics import MetricUnit

from jobhooks.management import deliveries
from jobhooks.management.models import (
    DeliveryDetail,
    DeliveryPage,
    ReplayedDelivery,
)
from jobhooks.management.openapi import (
    CursorQuery,
    DeliveryIdPath,
    EventIdQuery,
    LimitQuery,
    SubscriptionIdQuery,
    TenantScopeQuery,
    documented,
)
from jobhooks.management.routes.dependencies import CallerOf, Context, Sends
from jobhooks.management.scoping import delivery_scope, event_scope, subscription_scope
from jobhooks.storage.pages import DEFAULT_PAGE_SIZE

OK, ACCEPTED = HTTPStatus.OK, HTTPStatus.ACCEPTED
NOT_FOUND, CONFLICT = HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT
TAGS = ["deliveries"]

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]
logger = Logger(child=True)
metrics = Metrics()


@router.get(
    "/v1/deliveries",
    operation_id="list_deliveries",
    summary="A subscription's deliveries (newest first) or an event's (one per subscription)",
    description="Give exactly one of subscription_id and event_id.",
    responses=documented(OK, DeliveryPage, NOT_FOUND),
    tags=TAGS,
)
def handle_list_deliveries(
    context: Context,
    caller: CallerOf,
    subscription_id: SubscriptionIdQuery = None,
    event_id: EventIdQuery = None,
    tenant_id: TenantScopeQuery = None,
    limit: LimitQuery = DEFAULT_PAGE_SIZE,
    cursor: CursorQuery = None,
) -> DeliveryPage:
    scope = tenant_id
    if subscription_id is not None and event_id is None:
        scope = subscription_scope(context, caller, subscription_id, tenant_id)
    elif event_id is not None and subscription_id is None:
        scope = event_scope(context, caller, event_id, tenant_id, recorded=False)
    return deliveries.list_deliveries(
        context,
        subscription_id=subscription_id,
        event_id=event_id,
        tenant_id=scope,
        limit=limit,
        cursor=cursor,
    )


@router.get(
    "/v1/deliveries/<delivery_id>",
    operation_id="get_delivery",
    summary="Show a delivery with its attempt log",
    responses=documented(OK, DeliveryDetail, NOT_FOUND),
    tags=TAGS,
)
def handle_get_delivery(
    delivery_id: DeliveryIdPath,
    context: Context,
    caller: CallerOf,
    tenant_id: TenantScopeQuery = None,
) -> DeliveryDetail:
    scope = delivery_scope(context, caller, delivery_id, tenant_id)
    return deliveries.get_delivery(context, delivery_id, tenant_id=scope)


@router.post(
    "/v1/deliveries/<delivery_id>/replay",
    operation_id="replay_delivery",
    summary="Deliver again (replay: true), whatever the delivery's status",
    status_code=ACCEPTED,
    responses=documented(
        ACCEPTED, ReplayedDelivery, NOT_FOUND, CONFLICT, HTTPStatus.TOO_MANY_REQUESTS
    ),
    tags=TAGS,
)
def handle_replay_delivery(
    delivery_id: DeliveryIdPath,
    context: Context,
    caller: CallerOf,
    sends: Sends,
    tenant_id: TenantScopeQuery = None,
) -> ReplayedDelivery:
    scope = delivery_scope(context, caller, delivery_id, tenant_id)
    sends.take(caller, scope)
    replayed = deliveries.replay_delivery(context, delivery_id, tenant_id=scope)
    logger.info("delivery replayed", extra={"delivery_id": delivery_id})
    metrics.add_metric(name="DeliveriesReplayed", unit=MetricUnit.Count, value=1)
    return replayed
