"""Routes of /v1/subscriptions: create, list, show, change, delete, rotate the secret, test send,
recover.

Bodies and answers are never logged: a create or rotate answer carries a signing secret.
"""

from __future__ import annotations

from http import HTTPStatus

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from aws_lambda_powertools.metrics import MetricUnit

from jobhooks.management import recovery, subscriptions
from jobhooks.management.models import (
    RecoveryResult,
    RotateSecretRequest,
    SubscriptionPage,
    SubscriptionView,
    SubscriptionWithSecret,
    TestSendResult,
)
from jobhooks.management.openapi import (
    CreateSubscriptionBody,
    CursorQuery,
    LimitQuery,
    RecoverBody,
    RotateSecretBody,
    SubscriptionIdPath,
    TenantQuery,
    TenantScopeQuery,
    UpdateSubscriptionBody,
    documented,
)
from jobhooks.management.routes.dependencies import CallerOf, Context, Sends
from jobhooks.management.scoping import named_tenant, subscription_scope
from jobhooks.storage.pages import DEFAULT_PAGE_SIZE

OK, CREATED, NO_CONTENT = HTTPStatus.OK, HTTPStatus.CREATED, HTTPStatus.NO_CONTENT
NOT_FOUND, CONFLICT = HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT
ACCEPTED, UNPROCESSABLE = HTTPStatus.ACCEPTED, HTTPStatus.UNPROCESSABLE_ENTITY
TAGS = ["subscriptions"]

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]
logger = Logger(child=True)
metrics = Metrics()


@router.post(
    "/v1/subscriptions",
    operation_id="create_subscription",
    summary="Create a subscription; the answer shows its signing secret, once",
    status_code=CREATED,
    responses=documented(CREATED, SubscriptionWithSecret, NOT_FOUND, CONFLICT),
    tags=TAGS,
)
def handle_create_subscription(
    body: CreateSubscriptionBody, context: Context, caller: CallerOf
) -> SubscriptionWithSecret:
    named_tenant(caller, body.tenant_id)
    created = subscriptions.create_subscription(context, body)
    logger.info(
        "subscription created",
        extra={"subscription_id": created.subscription_id, "tenant_id": created.tenant_id},
    )
    metrics.add_metric(name="SubscriptionsCreated", unit=MetricUnit.Count, value=1)
    return created


@router.get(
    "/v1/subscriptions",
    operation_id="list_subscriptions",
    summary="List a tenant's subscriptions",
    responses=documented(OK, SubscriptionPage, NOT_FOUND),
    tags=TAGS,
)
def handle_list_subscriptions(
    tenant_id: TenantQuery,
    context: Context,
    caller: CallerOf,
    limit: LimitQuery = DEFAULT_PAGE_SIZE,
    cursor: CursorQuery = None,
) -> SubscriptionPage:
    tenant = named_tenant(caller, tenant_id)
    return subscriptions.list_subscriptions(context, tenant, limit=limit, cursor=cursor)


@router.get(
    "/v1/subscriptions/<subscription_id>",
    operation_id="get_subscription",
    summary="Show a subscription (never its secret)",
    responses=documented(OK, SubscriptionView, NOT_FOUND),
    tags=TAGS,
)
def handle_get_subscription(
    subscription_id: SubscriptionIdPath,
    context: Context,
    caller: CallerOf,
    tenant_id: TenantScopeQuery = None,
) -> SubscriptionView:
    scope = subscription_scope(context, caller, subscription_id, tenant_id)
    return subscriptions.get_subscription(context, subscription_id, tenant_id=scope)


@router.patch(
    "/v1/subscriptions/<subscription_id>",
    operation_id="update_subscription",
    summary="Change the URL, event types, description, or enable / disable",
    responses=documented(OK, SubscriptionView, NOT_FOUND, CONFLICT),
    tags=TAGS,
)
def handle_update_subscription(
    subscription_id: SubscriptionIdPath,
    body: UpdateSubscriptionBody,
    context: Context,
    caller: CallerOf,
    tenant_id: TenantScopeQuery = None,
) -> SubscriptionView:
    scope = subscription_scope(context, caller, subscription_id, tenant_id)
    updated = subscriptions.update_subscription(context, subscription_id, body, tenant_id=scope)
    logger.info("subscription updated", extra={"subscription_id": subscription_id})
    return updated


@router.delete(
    "/v1/subscriptions/<subscription_id>",
    operation_id="delete_subscription",
    summary="Delete a subscription; deliveries to it stop",
    status_code=NO_CONTENT,
    responses=documented(NO_CONTENT, None, NOT_FOUND),
    tags=TAGS,
)
def handle_delete_subscription(
    subscription_id: SubscriptionIdPath,
    context: Context,
    caller: CallerOf,
    tenant_id: TenantScopeQuery = None,
) -> Response[None]:
    scope = subscription_scope(context, caller, subscription_id, tenant_id)
    subscriptions.delete_subscription(context, subscription_id, tenant_id=scope)
    logger.info("subscription deleted", extra={"subscription_id": subscription_id})
    return Response(status_code=NO_CONTENT, body=None)


@router.post(
    "/v1/subscriptions/<subscription_id>/rotate-secret",
    operation_id="rotate_secret",
    summary="Issue a new signing secret; the old one signs on for the grace period",
    responses=documented(OK, SubscriptionWithSecret, NOT_FOUND, CONFLICT),
    tags=TAGS,
)
def handle_rotate_secret(
    subscription_id: SubscriptionIdPath,
    context: Context,
    caller: CallerOf,
    body: RotateSecretBody = None,
    tenant_id: TenantScopeQuery = None,
) -> SubscriptionWithSecret:
    scope = subscription_scope(context, caller, subscription_id, tenant_id)
    rotated = subscriptions.rotate_secret(
        context, subscription_id, body or RotateSecretRequest(), tenant_id=scope
    )
    logger.info("signing secret rotated", extra={"subscription_id": subscription_id})
    metrics.add_metric(name="SecretsRotated", unit=MetricUnit.Count, value=1)
    return rotated


@router.post(
    "/v1/subscriptions/<subscription_id>/test",
    operation_id="send_test_webhook",
    summary="Send a signed jobhooks.test webhook now; the attempt's result",
    responses=documented(OK, TestSendResult, NOT_FOUND, CONFLICT, HTTPStatus.TOO_MANY_REQUESTS),
    tags=TAGS,
)
def handle_send_test_webhook(
    subscription_id: SubscriptionIdPath,
    context: Context,
    caller: CallerOf,
    sends: Sends,
    tenant_id: TenantScopeQuery = None,
) -> TestSendResult:
    scope = subscription_scope(context, caller, subscription_id, tenant_id)
    sends.take(caller, scope)
    result = subscriptions.send_test_webhook(context, subscription_id, tenant_id=scope)
    metrics.add_metric(name="TestSends", unit=MetricUnit.Count, value=1)
    return result


@router.post(
    "/v1/subscriptions/<subscription_id>/recover",
    operation_id="recover_subscription",
    summary="Send again, oldest first, every delivery since a time that did not succeed",
    status_code=ACCEPTED,
    responses=documented(
        ACCEPTED, RecoveryResult, NOT_FOUND, CONFLICT, UNPROCESSABLE, HTTPStatus.SERVICE_UNAVAILABLE
    ),
    tags=TAGS,
)
def handle_recover_subscription(
    subscription_id: SubscriptionIdPath,
    body: RecoverBody,
    context: Context,
    caller: CallerOf,
    tenant_id: TenantScopeQuery = None,
) -> RecoveryResult:
    scope = subscription_scope(context, caller, subscription_id, tenant_id)
    recovered = recovery.recover_subscription(context, subscription_id, body, tenant_id=scope)
    logger.info(
        "subscription recovery page sent",
        extra={
            "subscription_id": subscription_id,
            "sent": recovered.sent,
            "more": recovered.next_cursor is not None,
        },
    )
    metrics.add_metric(name="DeliveriesRecovered", unit=MetricUnit.Count, value=recovered.sent)
    return recovered
