"""The tenant portal's routes: its page and assets (public), the link-for-session exchange,
and the portal's own API (one session, one tenant). `functions/portal/app.py` serves them;
operators issue links and revoke them through the management API (/v1/portal/...).

Every portal API handler takes its tenant from `Session`, the authorizer's verified context,
and never from the request: a path or body naming another tenant's object finds nothing
("not found"). The operations themselves are the tenant operations the /v1 routes call too.
"""

from __future__ import annotations

from datetime import timedelta
from http import HTTPStatus
from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from aws_lambda_powertools.shared.cookies import Cookie, SameSite
from pydantic import BaseModel

from jobhooks.access.callers import SESSION_COOKIE
from jobhooks.management import alerts, deliveries, recovery, subscriptions
from jobhooks.management.models import (
    AlertRuleList,
    AlertRuleView,
    CreateAlertRuleRequest,
    CreateSubscriptionRequest,
    DeliveryDetail,
    DeliveryPage,
    PortalAlertRuleRequest,
    RecoveryResult,
    ReplayedDelivery,
    RotateSecretRequest,
    SubscriptionPage,
    SubscriptionView,
    SubscriptionWithSecret,
    TestSendResult,
    UpdateSubscriptionRequest,
)
from jobhooks.management.openapi import (
    AlertRuleIdPath,
    CursorQuery,
    DeliveryIdPath,
    LimitQuery,
    RecoverBody,
    SubscriptionIdPath,
    documented,
)
from jobhooks.portal import pages
from jobhooks.portal.dependencies import (
    AnalyticsEngine,
    Context,
    Link,
    Portal,
    Pseudonyms,
    Sends,
    Session,
)
from jobhooks.portal.models import (
    JobHealthReport,
    PortalRefusal,
    PortalSessionView,
    PortalSubscriptionRequest,
)
from jobhooks.storage.pages import DEFAULT_PAGE_SIZE
from jobhooks.storage.times import format_time

if TYPE_CHECKING:
    from jobhooks.access.sessions import IssuedToken

OK, CREATED, ACCEPTED, NO_CONTENT = (
    HTTPStatus.OK,
    HTTPStatus.CREATED,
    HTTPStatus.ACCEPTED,
    HTTPStatus.NO_CONTENT,
)
NOT_FOUND, CONFLICT, FORBIDDEN = HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT, HTTPStatus.FORBIDDEN
SESSION_SECURITY: list[dict[str, list[str]]] = [{"portalSession": []}]
LINK_SECURITY: list[dict[str, list[str]]] = [{"portalLink": []}]
PORTAL_TAG = ["portal"]

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]


def portal_documented(
    status: HTTPStatus, model: type[BaseModel] | None, *errors: HTTPStatus
) -> dict[int, Any]:
    """`documented`, plus the refusals of a portal route: 401 from the function (no verified
    session reached it) and 403, from API Gateway when the authorizer denies (its own
    `{"message": "Forbidden"}`) or from the function when a write lacks X-Jobhooks-Portal."""
    answers = documented(status, model, HTTPStatus.UNAUTHORIZED, *errors)
    answers[HTTPStatus.FORBIDDEN.value] = {
        "description": "No valid link or session (API Gateway's answer), or a write without "
        "the X-Jobhooks-Portal header",
        "content": {"application/json": {"model": PortalRefusal}},
    }
    return answers


# -- the page and its assets (public: they hold no data) -------------------------------------


# With a trailing slash too: the same page (template.yaml gives it a public route of its own).
@router.get("/portal", include_in_schema=False)
@router.get("/portal/", include_in_schema=False)
def handle_portal_page() -> Response[str]:
    document = pages.page()
    return Response(status_code=OK, content_type=document.content_type, body=document.body)


@router.get("/portal/assets/<name>", include_in_schema=False)
def handle_portal_asset(name: Annotated[str, Path(max_length=64)]) -> Response[str]:
    found = pages.asset(name)
    if found is None:
        return Response(
            status_code=NOT_FOUND, content_type=content_types.TEXT_PLAIN, body="not found"
        )
    return Response(status_code=OK, content_type=found.content_type, body=found.body)


# -- the link-for-session exchange ------------------------------------------------------------


@router.post(
    "/portal/session",
    operation_id="open_portal_session",
    summary="Exchange a verified one-time link (X-Jobhooks-Portal-Link) for a session cookie",
    responses=portal_documented(OK, PortalSessionView, HTTPStatus.GONE),
    tags=PORTAL_TAG,
    security=LINK_SECURITY,
)
def handle_open_portal_session(link: Link, portal: Portal) -> Response[Any]:
    opened = portal.sessions.open_session(link)
    view = PortalSessionView(
        tenant_id=opened.tenant_id,
        session_id=opened.token_id,
        expires_at=format_time(opened.expires_at),
    )
    return Response(
        status_code=OK,
        content_type=content_types.APPLICATION_JSON,
        body=view.model_dump_json(),
        cookies=[_session_cookie(opened, portal.settings.session_lifetime)],
    )


@router.get(
    "/portal/api/session",
    operation_id="show_portal_session",
    summary="The session's tenant and expiry",
    responses=portal_documented(OK, PortalSessionView),
    tags=PORTAL_TAG,
    security=SESSION_SECURITY,
)
def handle_show_portal_session(session: Session) -> PortalSessionView:
    return PortalSessionView(
        tenant_id=session.tenant_id,
        session_id=session.token_id,
        expires_at=format_time(_utc(session.expires_at)),
    )


@router.delete(
    "/portal/api/session",
    operation_id="close_portal_session",
    summary="Sign out: the session ends now, everywhere",
    status_code=NO_CONTENT,
    responses=portal_documented(NO_CONTENT, None),
    tags=PORTAL_TAG,
    security=SESSION_SECURITY,
)
def handle_close_portal_session(session: Session, portal: Portal) -> Response[None]:
    portal.sessions.end_session(session)
    expired = Cookie(
        name=SESSION_COOKIE,
        value="",
        path="/",
        secure=True,
        http_only=True,
        same_site=SameSite.STRICT_MODE,
        max_age=0,
    )
    return Response(status_code=NO_CONTENT, body=None, cookies=[expired])


# -- the portal API: the session's tenant only ------------------------------------------------


@router.get(
    "/portal/api/subscriptions",
    operation_id="portal_list_subscriptions",
    summary="The tenant's endpoints",
    responses=portal_documented(OK, SubscriptionPage),
    tags=PORTAL_TAG,
    security=SESSION_SECURITY,
)
def handle_portal_list_subscriptions(
    session: Session,
    context: Context,
    limit: LimitQuery = DEFAULT_PAGE_SIZE,
    cursor: CursorQuery = None,
) -> SubscriptionPage:
    return subscriptions.list_subscriptions(context, session.tenant_id, limit=limit, cursor=cursor)


@router.post(
    "/portal/api/subscriptions",
    operation_id="portal_create_subscription",
    summary="Add an endpoint; the answer shows its signing secret, once",
    status_code=CREATED,
    responses=portal_documented(CREATED, SubscriptionWithSecret, CONFLICT),
    tags=PORTAL_TAG,
    security=SESSION_SECURITY,
)
def handle_portal_create_subscription(
    body: PortalSubscriptionRequest, session: Session, context: Context
) -> SubscriptionWithSecret:
    return subscriptions.create_subscription(
        context,
        CreateSubscriptionRequest(
            tenant_id=session.tenant_id,
            url=body.url,
            event_types=body.event_types,
            job_names=body.job_names,
            description=body.description,
        ),
    )


@router.get(
    "/portal/api/subscriptions/<subscription_id>",
    operation_id="portal_get_subscription",
    summary="One endpoint of the tenant",
    responses=portal_documented(OK, SubscriptionView, NOT_FOUND),
    tags=PORTAL_TAG,
    security=SESSION_SECURITY,
)
def handle_portal_get_subscription(
    subscription_id: SubscriptionIdPath, session: Session, context: Context
) -> SubscriptionView:
    return subscriptions.get_subscription(context, subscription_id, tenant_id=session.tenant_id)


@router.patch(
    "/portal/api/subscriptions/<subscription_id>",
    operation_id="portal_update_subscription",
    summary="Change an endpoint's URL, event types, job filter or description, or disable / "
    "enable it",
    responses=portal_documented(OK, SubscriptionView, NOT_FOUND, CONFLICT),
    tags=PORTAL_TAG,
    security=SESSION_SECURITY,
)
def handle_portal_update_subscription(
    subscription_id: SubscriptionIdPath,
    body: UpdateSubscriptionRequest,
    session: Session,
    context: Context,
) -> SubscriptionView:
    # Another tenant's id is "not found" before the new URL is judged: the answer never
    # depends on what the request asked to change.
    context.subscriptions.get(subscription_id, tenant_id=session.tenant_id)
    return subscriptions.update_subscription(
        context, subscription_id, body, tenant_id=session.tenant_id
    )


@router.delete(
    "/portal/api/subscriptions/<subscription_id>",
    operation_id="portal_delete_subscription",
    summary="Delete an endpoint",
    status_code=NO_CONTENT,
    responses=portal_documented(NO_CONTENT, None, NOT_FOUND),
    tags=PORTAL_TAG,
    security=SESSION_SECURITY,
)
def handle_portal_delete_subscription(
    subscription_id: SubscriptionIdPath, session: Session, context: Context
) -> Response[None]:
    subscriptions.delete_subscription(context, subscription_id, tenant_id=session.tenant_id)
    return Response(status_code=NO_CONTENT, body=None)


@router.post(
    "/portal/api/subscriptions/<subscription_id>/rotate-secret",
    operation_id="portal_rotate_secret",
    summary="A new signing secret; the old one keeps signing for the grace period",
    responses=portal_documented(OK, SubscriptionWithSecret, NOT_FOUND, CONFLICT),
    tags=PORTAL_TAG,
    security=SESSION_SECURITY,
)
def handle_portal_rotate_secret(
    subscription_id: SubscriptionIdPath,
    session: Session,
    context: Context,
    body: RotateSecretRequest | None = None,
) -> SubscriptionWithSecret:
    return subscriptions.rotate_secret(
        context, subscription_id, body or RotateSecretRequest(), tenant_id=session.tenant_id
    )


@router.post(
    "/portal/api/subscriptions/<subscription_id>/test",
    operation_id="portal_send_test_webhook",
    summary="Send a signed jobhooks.test webhook now; the attempt's result",
    responses=portal_documented(OK, TestSendResult, NOT_FOUND, HTTPStatus.TOO_MANY_REQUESTS),
    tags=PORTAL_TAG,
    security=SESSION_SECURITY,
)
def handle_portal_send_test_webhook(
    subscription_id: SubscriptionIdPath, session: Session, context: Context, sends: Sends
) -> TestSendResult:
    sends.take(session, session.tenant_id)
    return subscriptions.send_test_webhook(context, subscription_id, tenant_id=session.tenant_id)


@router.post(
    "/portal/api/subscriptions/<subscription_id>/recover",
    operation_id="portal_recover_subscription",
    summary="Send again, oldest first, every delivery since a time that did not succeed",
    status_code=ACCEPTED,
    responses=portal_documented(
        ACCEPTED, RecoveryResult, NOT_FOUND, CONFLICT, HTTPStatus.UNPROCESSABLE_ENTITY
    ),
    tags=PORTAL_TAG,
    security=SESSION_SECURITY,
)
def handle_portal_recover_subscription(
    subscription_id: SubscriptionIdPath, body: RecoverBody, session: Session, context: Context
) -> RecoveryResult:
    return recovery.recover_subscription(
        context, subscription_id, body, tenant_id=session.tenant_id
    )


@router.get(
    "/portal/api/subscriptions/<subscription_id>/deliveries",
    operation_id="portal_list_deliveries",
    summary="An endpoint's deliveries, newest first, each with its last attempt",
    responses=portal_documented(OK, DeliveryPage, NOT_FOUND),
    tags=PORTAL_TAG,
    security=SESSION_SECURITY,
)
def handle_portal_list_deliveries(
    subscription_id: SubscriptionIdPath,
    session: Session,
    context: Context,
    limit: LimitQuery = DEFAULT_PAGE_SIZE,
    cursor: CursorQuery = None,
) -> DeliveryPage:
    # Another tenant's endpoint is "not found", not an empty list.
    context.subscriptions.get(subscription_id, tenant_id=session.tenant_id)
    return deliveries.list_deliveries(
        context,
        subscription_id=subscription_id,
        tenant_id=session.tenant_id,
        limit=limit,
        cursor=cursor,
    )


@router.get(
    "/portal/api/deliveries/<delivery_id>",
    operation_id="portal_get_delivery",
    summary="A delivery with every attempt",
    responses=portal_documented(OK, DeliveryDetail, NOT_FOUND),
    tags=PORTAL_TAG,
    security=SESSION_SECURITY,
)
def handle_portal_get_delivery(
    delivery_id: DeliveryIdPath, session: Session, context: Context
) -> DeliveryDetail:
    return deliveries.get_delivery(context, delivery_id, tenant_id=session.tenant_id)


@router.post(
    "/portal/api/deliveries/<delivery_id>/replay",
    operation_id="portal_replay_delivery",
    summary="Deliver again, whatever the delivery's status",
    status_code=ACCEPTED,
    responses=portal_documented(
        ACCEPTED, ReplayedDelivery, NOT_FOUND, CONFLICT, HTTPStatus.TOO_MANY_REQUESTS
    ),
    tags=PORTAL_TAG,
    security=SESSION_SECURITY,
)
def handle_portal_replay_delivery(
    delivery_id: DeliveryIdPath, session: Session, context: Context, sends: Sends
) -> ReplayedDelivery:
    sends.take(session, session.tenant_id)
    return deliveries.replay_delivery(context, delivery_id, tenant_id=session.tenant_id)


@router.get(
    "/portal/api/analytics/jobs",
    operation_id="portal_job_health",
    summary="Failure rate and p95 duration per job_name of the tenant's events",
    responses=portal_documented(OK, JobHealthReport),
    tags=PORTAL_TAG,
    security=SESSION_SECURITY,
)
def handle_portal_job_health(
    session: Session,
    context: Context,
    engine: AnalyticsEngine,
    pseudonyms: Pseudonyms,
    days: Annotated[int, Query(ge=1, le=90, description="the window, in days up to now")] = 7,
) -> JobHealthReport:
    # The analytics package loads here: most portal requests never draw the chart.
    from jobhooks.portal import analytics

    return analytics.job_health(
        session.tenant_id, days=days, now=context.clock(), engine=engine, pseudonymizer=pseudonyms
    )


@router.get(
    "/portal/api/alerts",
    operation_id="portal_list_alert_rules",
    summary="The tenant's job-health alert rules and their recent alerts",
    responses=portal_documented(OK, AlertRuleList),
    tags=PORTAL_TAG,
    security=SESSION_SECURITY,
)
def handle_portal_list_alert_rules(session: Session, context: Context) -> AlertRuleList:
    return alerts.list_alert_rules(context, session.tenant_id)


@router.post(
    "/portal/api/alerts",
    operation_id="portal_create_alert_rule",
    summary="Add a job-health alert rule",
    status_code=CREATED,
    responses=portal_documented(CREATED, AlertRuleView, CONFLICT),
    tags=PORTAL_TAG,
    security=SESSION_SECURITY,
)
def handle_portal_create_alert_rule(
    body: PortalAlertRuleRequest, session: Session, context: Context
) -> AlertRuleView:
    return alerts.create_alert_rule(
        context,
        CreateAlertRuleRequest(tenant_id=session.tenant_id, **body.model_dump()),
    )


@router.delete(
    "/portal/api/alerts/<rule_id>",
    operation_id="portal_delete_alert_rule",
    summary="Remove an alert rule",
    status_code=NO_CONTENT,
    responses=portal_documented(NO_CONTENT, None, NOT_FOUND),
    tags=PORTAL_TAG,
    security=SESSION_SECURITY,
)
def handle_portal_delete_alert_rule(
    rule_id: AlertRuleIdPath, session: Session, context: Context
) -> Response[None]:
    alerts.delete_alert_rule(context, rule_id, tenant_id=session.tenant_id)
    return Response(status_code=NO_CONTENT, body=None)


# -- helpers ----------------------------------------------------------------------------------


def _session_cookie(opened: IssuedToken, lifetime: timedelta) -> Cookie:
    # __Host-: Secure, Path=/ and no Domain, so no other host (not even a subdomain) can set
    # or shadow it; HttpOnly: no script reads it; SameSite=Strict: no other site sends it.
    return Cookie(
        name=SESSION_COOKIE,
        value=opened.token,
        path="/",
        secure=True,
        http_only=True,
        same_site=SameSite.STRICT_MODE,
        max_age=int(lifetime.total_seconds()),
    )


def _utc(seconds: int) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(seconds, UTC)
