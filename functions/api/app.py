"""Management API function: subscriptions, deliveries, quarantine and dead-letter queues.

Wiring only: one route per operation, each one call into `jobhooks.management` (docs/api.md).
API Gateway authorizes every request with IAM (SigV4) before it gets here. Request bodies and
answers are never logged: a create or rotate answer carries a signing secret.
"""

from __future__ import annotations

import json
import os
from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from jobhooks.management import deliveries, dlq, events, quarantine, subscriptions
from jobhooks.management.context import ManagementContext
from jobhooks.management.exceptions import (
    ApiError,
    RequestBodyError,
    api_error_for,
    api_error_for_invalid_request,
    api_error_for_unknown_route,
)
from jobhooks.management.models import (
    DEFAULT_PAGE_SIZE,
    DeadLetterListing,
    DeadLetterQueue,
    DeliveryDetail,
    DeliveryPage,
    EventReplay,
    QuarantinedMessageDetail,
    QuarantinePage,
    QuarantineReplayRequest,
    QuarantineReplayResult,
    RedriveRequest,
    RedriveResult,
    ReplayedDelivery,
    RotateSecretRequest,
    SubscriptionPage,
    SubscriptionView,
    SubscriptionWithSecret,
    TestSendResult,
    UnmatchedEventPage,
)
from jobhooks.management.openapi import (
    CreateSubscriptionBody,
    CursorQuery,
    DeadLetterQueueQuery,
    DeliveryIdPath,
    EventIdPath,
    EventIdQuery,
    LimitQuery,
    PeekLimitQuery,
    QuarantineIdPath,
    QuarantineReplayBody,
    ReasonQuery,
    RedriveBody,
    RotateSecretBody,
    SubscriptionIdPath,
    SubscriptionIdQuery,
    TenantQuery,
    TenantScopeQuery,
    UpdateSubscriptionBody,
    document_metadata,
    documented,
)
from jobhooks.management.request_body import accept_request_body
from jobhooks.management.routes import grants as grant_routes
from jobhooks.management.routes import portal as portal_routes
from jobhooks.management.routes.dependencies import management_context
from jobhooks.portal.callers import gate_request
from jobhooks.portal.pages import is_portal_path, portal_headers

OK, CREATED, ACCEPTED, NO_CONTENT = (
    HTTPStatus.OK,
    HTTPStatus.CREATED,
    HTTPStatus.ACCEPTED,
    HTTPStatus.NO_CONTENT,
)
NOT_FOUND, CONFLICT = HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT

logger = Logger()
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "jobhooks"))
app = APIGatewayHttpResolver(enable_validation=True)
app.include_router(portal_routes.router)
app.include_router(grant_routes.router)

Context = Annotated[ManagementContext, Depends(management_context)]

# -- subscriptions ---------------------------------------------------------------------------


@app.post(
    "/v1/subscriptions",
    operation_id="create_subscription",
    summary="Create a subscription; the answer shows its signing secret, once",
    status_code=CREATED,
    responses=documented(CREATED, SubscriptionWithSecret),
    tags=["subscriptions"],
)
def handle_create_subscription(
    body: CreateSubscriptionBody, context: Context
) -> SubscriptionWithSecret:
    created = subscriptions.create_subscription(context, body)
    logger.info(
        "subscription created",
        extra={"subscription_id": created.subscription_id, "tenant_id": created.tenant_id},
    )
    metrics.add_metric(name="SubscriptionsCreated", unit=MetricUnit.Count, value=1)
    return created


@app.get(
    "/v1/subscriptions",
    operation_id="list_subscriptions",
    summary="List a tenant's subscriptions",
    responses=documented(OK, SubscriptionPage),
    tags=["subscriptions"],
)
def handle_list_subscriptions(
    tenant_id: TenantQuery,
    context: Context,
    limit: LimitQuery = DEFAULT_PAGE_SIZE,
    cursor: CursorQuery = None,
) -> SubscriptionPage:
    return subscriptions.list_subscriptions(context, tenant_id, limit=limit, cursor=cursor)


@app.get(
    "/v1/subscriptions/<subscription_id>",
    operation_id="get_subscription",
    summary="Show a subscription (never its secret)",
    responses=documented(OK, SubscriptionView, NOT_FOUND),
    tags=["subscriptions"],
)
def handle_get_subscription(
    subscription_id: SubscriptionIdPath, context: Context, tenant_id: TenantScopeQuery = None
) -> SubscriptionView:
    return subscriptions.get_subscription(context, subscription_id, tenant_id=tenant_id)


@app.patch(
    "/v1/subscriptions/<subscription_id>",
    operation_id="update_subscription",
    summary="Change the URL, event types, description, or enable / disable",
    responses=documented(OK, SubscriptionView, NOT_FOUND, CONFLICT),
    tags=["subscriptions"],
)
def handle_update_subscription(
    subscription_id: SubscriptionIdPath,
    body: UpdateSubscriptionBody,
    context: Context,
    tenant_id: TenantScopeQuery = None,
) -> SubscriptionView:
    updated = subscriptions.update_subscription(context, subscription_id, body, tenant_id=tenant_id)
    logger.info("subscription updated", extra={"subscription_id": subscription_id})
    return updated


@app.delete(
    "/v1/subscriptions/<subscription_id>",
    operation_id="delete_subscription",
    summary="Delete a subscription; deliveries to it stop",
    status_code=NO_CONTENT,
    responses=documented(NO_CONTENT, None, NOT_FOUND),
    tags=["subscriptions"],
)
def handle_delete_subscription(
    subscription_id: SubscriptionIdPath, context: Context, tenant_id: TenantScopeQuery = None
) -> Response[None]:
    subscriptions.delete_subscription(context, subscription_id, tenant_id=tenant_id)
    logger.info("subscription deleted", extra={"subscription_id": subscription_id})
    return Response(status_code=NO_CONTENT, body=None)


@app.post(
    "/v1/subscriptions/<subscription_id>/rotate-secret",
    operation_id="rotate_secret",
    summary="Issue a new signing secret; the old one signs on for the grace period",
    responses=documented(OK, SubscriptionWithSecret, NOT_FOUND, CONFLICT),
    tags=["subscriptions"],
)
def handle_rotate_secret(
    subscription_id: SubscriptionIdPath,
    context: Context,
    body: RotateSecretBody = None,
    tenant_id: TenantScopeQuery = None,
) -> SubscriptionWithSecret:
    rotated = subscriptions.rotate_secret(
        context, subscription_id, body or RotateSecretRequest(), tenant_id=tenant_id
    )
    logger.info("signing secret rotated", extra={"subscription_id": subscription_id})
    metrics.add_metric(name="SecretsRotated", unit=MetricUnit.Count, value=1)
    return rotated


@app.post(
    "/v1/subscriptions/<subscription_id>/test",
    operation_id="send_test_webhook",
    summary="Send a signed jobhooks.test webhook now; the attempt's result",
    responses=documented(OK, TestSendResult, NOT_FOUND, CONFLICT),
    tags=["subscriptions"],
)
def handle_send_test_webhook(
    subscription_id: SubscriptionIdPath, context: Context, tenant_id: TenantScopeQuery = None
) -> TestSendResult:
    result = subscriptions.send_test_webhook(context, subscription_id, tenant_id=tenant_id)
    metrics.add_metric(name="TestSends", unit=MetricUnit.Count, value=1)
    return result


# -- deliveries and events -------------------------------------------------------------------


@app.get(
    "/v1/deliveries",
    operation_id="list_deliveries",
    summary="A subscription's deliveries (newest first) or an event's (one per subscription)",
    description="Give exactly one of subscription_id and event_id.",
    responses=documented(OK, DeliveryPage),
    tags=["deliveries"],
)
def handle_list_deliveries(
    context: Context,
    subscription_id: SubscriptionIdQuery = None,
    event_id: EventIdQuery = None,
    tenant_id: TenantScopeQuery = None,
    limit: LimitQuery = DEFAULT_PAGE_SIZE,
    cursor: CursorQuery = None,
) -> DeliveryPage:
    return deliveries.list_deliveries(
        context,
        subscription_id=subscription_id,
        event_id=event_id,
        tenant_id=tenant_id,
        limit=limit,
        cursor=cursor,
    )


@app.get(
    "/v1/deliveries/<delivery_id>",
    operation_id="get_delivery",
    summary="Show a delivery with its attempt log",
    responses=documented(OK, DeliveryDetail, NOT_FOUND),
    tags=["deliveries"],
)
def handle_get_delivery(
    delivery_id: DeliveryIdPath, context: Context, tenant_id: TenantScopeQuery = None
) -> DeliveryDetail:
    return deliveries.get_delivery(context, delivery_id, tenant_id=tenant_id)


@app.post(
    "/v1/deliveries/<delivery_id>/replay",
    operation_id="replay_delivery",
    summary="Deliver again (replay: true), whatever the delivery's status",
    status_code=ACCEPTED,
    responses=documented(ACCEPTED, ReplayedDelivery, NOT_FOUND, CONFLICT),
    tags=["deliveries"],
)
def handle_replay_delivery(
    delivery_id: DeliveryIdPath, context: Context, tenant_id: TenantScopeQuery = None
) -> ReplayedDelivery:
    replayed = deliveries.replay_delivery(context, delivery_id, tenant_id=tenant_id)
    logger.info("delivery replayed", extra={"delivery_id": delivery_id})
    metrics.add_metric(name="DeliveriesReplayed", unit=MetricUnit.Count, value=1)
    return replayed


@app.post(
    "/v1/events/<event_id>/replay",
    operation_id="replay_event",
    summary="Deliver an event again to every subscription that wants it now",
    status_code=ACCEPTED,
    responses=documented(ACCEPTED, EventReplay, NOT_FOUND, CONFLICT),
    tags=["events"],
)
def handle_replay_event(
    event_id: EventIdPath, context: Context, tenant_id: TenantScopeQuery = None
) -> EventReplay:
    replayed = events.replay_event(context, event_id, tenant_id=tenant_id)
    logger.info(
        "event replayed", extra={"event_id": event_id, "deliveries": len(replayed.deliveries)}
    )
    metrics.add_metric(name="EventsReplayed", unit=MetricUnit.Count, value=1)
    return replayed


@app.get(
    "/v1/events/unmatched",
    operation_id="list_unmatched_events",
    summary="A tenant's events that no subscription wanted, newest first",
    responses=documented(OK, UnmatchedEventPage),
    tags=["events"],
)
def handle_list_unmatched_events(
    tenant_id: TenantQuery,
    context: Context,
    limit: LimitQuery = DEFAULT_PAGE_SIZE,
    cursor: CursorQuery = None,
) -> UnmatchedEventPage:
    return events.list_unmatched_events(context, tenant_id, limit=limit, cursor=cursor)


# -- quarantine ------------------------------------------------------------------------------


@app.get(
    "/v1/quarantine",
    operation_id="list_quarantine",
    summary="Rejected messages with their reason codes",
    responses=documented(OK, QuarantinePage),
    tags=["quarantine"],
)
def handle_list_quarantine(
    context: Context,
    reason: ReasonQuery = None,
    limit: LimitQuery = DEFAULT_PAGE_SIZE,
    cursor: CursorQuery = None,
) -> QuarantinePage:
    return quarantine.list_quarantine(context, reason=reason, limit=limit, cursor=cursor)


@app.get(
    "/v1/quarantine/<quarantine_id>",
    operation_id="get_quarantined_message",
    summary="Show a rejected message, the original SQS body included",
    responses=documented(OK, QuarantinedMessageDetail, NOT_FOUND),
    tags=["quarantine"],
)
def handle_get_quarantined_message(
    quarantine_id: QuarantineIdPath, context: Context
) -> QuarantinedMessageDetail:
    return quarantine.get_quarantined_message(context, quarantine_id)


@app.post(
    "/v1/quarantine/<quarantine_id>/replay",
    operation_id="replay_quarantined_message",
    summary="Run a rejected message through ingest again, after its cause was fixed",
    responses=documented(OK, QuarantineReplayResult, NOT_FOUND, CONFLICT),
    tags=["quarantine"],
)
def handle_replay_quarantined_message(
    quarantine_id: QuarantineIdPath,
    context: Context,
    body: QuarantineReplayBody = None,
) -> QuarantineReplayResult:
    result = quarantine.replay_quarantined_message(
        context,
        quarantine_id,
        body or QuarantineReplayRequest(),
        remaining_ms=app.lambda_context.get_remaining_time_in_millis(),
    )
    logger.info(
        "quarantined message replayed",
        extra={"quarantine_id": quarantine_id, "outcome": result.outcome},
    )
    metrics.add_metric(name="QuarantineReplayed", unit=MetricUnit.Count, value=1)
    return result


# -- dead-letter queues ----------------------------------------------------------------------


@app.get(
    "/v1/dlq",
    operation_id="list_dlq",
    summary="Count and peek at a dead-letter queue",
    responses=documented(OK, DeadLetterListing),
    tags=["dlq"],
)
def handle_list_dlq(
    context: Context,
    queue: DeadLetterQueueQuery = DeadLetterQueue.DELIVERY,
    limit: PeekLimitQuery = 10,
) -> DeadLetterListing:
    return dlq.list_dlq(context, queue, limit=limit)


@app.post(
    "/v1/dlq/redrive",
    operation_id="redrive_dlq",
    summary="Move a dead-letter queue's messages back to their source queue",
    status_code=ACCEPTED,
    responses=documented(ACCEPTED, RedriveResult, CONFLICT),
    tags=["dlq"],
)
def handle_redrive_dlq(context: Context, body: RedriveBody = None) -> RedriveResult:
    result = dlq.redrive_dlq(context, body or RedriveRequest())
    logger.info(
        "dead-letter queue redriven",
        extra={"queue": result.queue.value, "method": result.method, "moved": result.moved},
    )
    metrics.add_metric(name="Redrives", unit=MetricUnit.Count, value=1)
    return result


# -- errors ----------------------------------------------------------------------------------


def error_response(error: ApiError) -> Response[Any]:
    return Response(
        status_code=error.status,
        content_type=content_types.APPLICATION_JSON,
        body=error.body(),
    )


@app.exception_handler(RequestValidationError)  # type: ignore[untyped-decorator]
def handle_invalid_request(error: RequestValidationError) -> Response[Any]:
    answer = api_error_for_invalid_request(error.errors())
    logger.info("request refused", extra={"code": answer.code, "field": answer.field})
    return error_response(answer)


@app.not_found
def handle_unknown_route(_: NotFoundError) -> Response[Any]:
    http = app.current_event.request_context.http
    return error_response(api_error_for_unknown_route(http.method, http.path))


def refuse_request_body(event: dict[str, Any], error: RequestBodyError) -> dict[str, Any]:
    """The answer to a body `accept_request_body` refused, before the Event Handler runs.

    A client's mistake (or a probe), not the function's: a WARNING without the body, not a
    traceback and no `ApiErrors`.
    """
    answer = api_error_for(error)
    http = (event.get("requestContext") or {}).get("http") or {}
    logger.warning(
        "request body refused",
        extra={
            "code": answer.code,
            "method": str(http.get("method", "")),
            "path": str(http.get("path", ""))[:200],
        },
    )
    return {
        "statusCode": answer.status,
        "headers": {"Content-Type": content_types.APPLICATION_JSON},
        "body": json.dumps(answer.body(), separators=(",", ":")),
        "isBase64Encoded": False,
    }


@app.exception_handler(Exception)  # type: ignore[untyped-decorator]
def handle_error(error: Exception) -> Response[Any]:
    answer = api_error_for(error)
    if answer.status >= HTTPStatus.INTERNAL_SERVER_ERROR:
        logger.exception("request failed", extra={"code": answer.code})
        metrics.add_metric(name="ApiErrors", unit=MetricUnit.Count, value=1)
    else:
        logger.info("request refused", extra={"code": answer.code, "field": answer.field})
    return error_response(answer)


# -- the function ----------------------------------------------------------------------------


def openapi_json() -> str:
    """The OpenAPI document of this API (scripts/generate-openapi.py writes it to docs/)."""
    return app.get_openapi_json_schema(**document_metadata())


def refuse_caller(event: dict[str, Any], answer: ApiError) -> dict[str, Any]:
    """A request without the identity its route needs (`gate_request`): never routed."""
    http = (event.get("requestContext") or {}).get("http") or {}
    logger.warning(
        "request without the caller identity its route needs",
        extra={"code": answer.code, "path": str(http.get("path", ""))[:200]},
    )
    return {
        "statusCode": answer.status,
        "headers": {"Content-Type": content_types.APPLICATION_JSON},
        "body": json.dumps(answer.body(), separators=(",", ":")),
        "isBase64Encoded": False,
    }


# log_event=False whatever POWERTOOLS_LOGGER_LOG_EVENT says: events carry portal session
# cookies, link tokens and signing secrets in request bodies.
@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True, log_event=False
)
@metrics.log_metrics(raise_on_empty_metrics=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    path = str(((event.get("requestContext") or {}).get("http") or {}).get("path", ""))
    answered = route_request(event, context)
    # The portal's page, assets and API answers carry its security and cache headers.
    return portal_headers(path, answered) if is_portal_path(path) else answered


def route_request(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    refused = gate_request(event)
    if refused is not None:
        return refuse_caller(event, api_error_for(refused))
    # The body is read here, before routing: the Event Handler's own parsing lets invalid
    # UTF-8, deep nesting and unknown media types escape as 500s.
    try:
        accepted = accept_request_body(event)
    except RequestBodyError as error:
        return refuse_request_body(event, error)
    return app.resolve(accepted, context)
