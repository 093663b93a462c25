"""Subscriptions: create, list, show, change, delete, rotate the secret, send a test webhook.

Every URL a subscription is given (at creation and on change) passes the delivery network
policy first, so a hostile URL is refused with the policy's reason code before anything is
stored; the deliver function checks it again before every attempt, as DNS answers change.

A plaintext secret leaves this module twice only: in the answer to `create_subscription` and
to `rotate_secret`, each time the new secret, once. Every other answer is a `SubscriptionView`,
which has no field for one.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

from jobhooks import __version__
from jobhooks.management.context import ManagementContext
from jobhooks.management.models import (
    TEST_EVENT_TYPE,
    CreateSubscriptionRequest,
    RotateSecretRequest,
    SecretInfo,
    SubscriptionPage,
    SubscriptionView,
    SubscriptionWithSecret,
    TestSendResult,
    UpdateSubscriptionRequest,
)
from jobhooks.storage.times import format_time

if TYPE_CHECKING:
    from jobhooks.subscriptions.model import Subscription
    from jobhooks.subscriptions.store import IssuedSecret

TEST_JOB_NAME = "jobhooks.test"
_log = logging.getLogger("jobhooks.management")


def create_subscription(
    context: ManagementContext, request: CreateSubscriptionRequest
) -> SubscriptionWithSecret:
    context.network_policy.check_url(request.url)
    issued = context.subscriptions.create(
        request.tenant_id,
        request.url,
        [event_type.value for event_type in request.event_types],
        description=request.description,
        job_names=request.job_names,
    )
    return _with_secret(context, issued)


def list_subscriptions(
    context: ManagementContext, tenant_id: str, *, limit: int, cursor: str | None = None
) -> SubscriptionPage:
    page = context.subscriptions.list_by_tenant(tenant_id, limit=limit, cursor=cursor)
    now = context.clock()
    return SubscriptionPage(
        subscriptions=[subscription_view(item, now) for item in page.subscriptions],
        next_cursor=page.next_cursor,
    )


def get_subscription(
    context: ManagementContext, subscription_id: str, *, tenant_id: str | None = None
) -> SubscriptionView:
    subscription = context.subscriptions.get(subscription_id, tenant_id=tenant_id)
    return subscription_view(subscription, context.clock())


def update_subscription(
    context: ManagementContext,
    subscription_id: str,
    request: UpdateSubscriptionRequest,
    *,
    tenant_id: str | None = None,
) -> SubscriptionView:
    if request.url is not None:
        context.network_policy.check_url(request.url)
    # A disable is its own conditional write, after the other changes (so a refused one leaves
    # the endpoint as it was): the one that disables it notifies `endpoint.disabled`.
    disabling = request.status is not None and request.status.value == "disabled"
    subscription = context.subscriptions.update(
        subscription_id,
        tenant_id=tenant_id,
        url=request.url,
        event_types=(
            [event_type.value for event_type in request.event_types]
            if request.event_types is not None
            else None
        ),
        description=request.description,
        status=request.status.value if request.status is not None and not disabling else None,
        job_names=request.job_names,
    )
    if disabling:
        subscription = disable_by_operator(context, subscription_id, tenant_id=tenant_id) or (
            context.subscriptions.get(subscription_id, tenant_id=tenant_id)
        )
    return subscription_view(subscription, context.clock())


def disable_by_operator(
    context: ManagementContext, subscription_id: str, *, tenant_id: str | None = None
) -> Subscription | None:
    """Disable it (an operator, or the tenant through the API, the CLI or the portal) and, when
    this call is the one that disabled it, notify `endpoint.disabled` with reason `operator`.

    The disabled subscription when this call disabled it, None when it was disabled already. A
    notification that cannot be sent is kept on the subscription, to be sent by the next read of
    its endpoint (`jobhooks.endpoint_health.owed`); the disable stands."""
    from jobhooks.endpoint_health.disabled import DisableCause, disabled_data, disabled_key
    from jobhooks.endpoint_health.observer import owe_notification
    from jobhooks.endpoint_health.owed import OwedNotification
    from jobhooks.notifications.exceptions import NotificationNotSentError
    from jobhooks.subscriptions.store import DISABLED_BY_TENANT

    disabled = context.subscriptions.disable_once(
        subscription_id, DISABLED_BY_TENANT, tenant_id=tenant_id
    )
    if disabled is None:
        return None  # disabled already: its notification went out then
    at = disabled.updated_at
    data = disabled_data(subscription_id, DisableCause.OPERATOR, DISABLED_BY_TENANT, at)
    key = disabled_key(subscription_id, at)
    try:
        context.notifier.notify(
            disabled.tenant_id, "endpoint.disabled", data, subscription_id, key=key
        )
    except Exception as error:  # the disable stands; the notification is kept, not lost
        sent_at = error.at if isinstance(error, NotificationNotSentError) else None
        owe_notification(
            context.subscriptions,
            OwedNotification(
                tenant_id=disabled.tenant_id,
                type="endpoint.disabled",
                data=data,
                about_subscription=subscription_id,
                key=key,
                at=sent_at or context.clock(),
            ),
        )
    return disabled


def delete_subscription(
    context: ManagementContext, subscription_id: str, *, tenant_id: str | None = None
) -> None:
    context.subscriptions.delete(subscription_id, tenant_id=tenant_id)


def rotate_secret(
    context: ManagementContext,
    subscription_id: str,
    request: RotateSecretRequest,
    *,
    tenant_id: str | None = None,
) -> SubscriptionWithSecret:
    issued = context.subscriptions.rotate_secret(
        subscription_id, tenant_id=tenant_id, grace_seconds=request.grace_seconds
    )
    return _with_secret(context, issued)


def send_test_webhook(
    context: ManagementContext, subscription_id: str, *, tenant_id: str | None = None
) -> TestSendResult:
    """POST a signed `jobhooks.test` webhook to the subscription now; the attempt's result.

    Signed with every secret that still signs, exactly like a real delivery, so a receiver can
    check its verification (during a rotation: under both secrets). Nothing is queued, retried
    or recorded, and the subscription's status is neither checked nor changed.
    """
    # The delivery code (signing, the HTTP client) loads with the first test send.
    from jobhooks.delivery.deliver import send_webhook_now

    subscription = context.subscriptions.get(subscription_id, tenant_id=tenant_id)
    now = context.clock()
    event_id = f"{TEST_EVENT_TYPE}.{uuid.uuid4()}"
    sent = send_webhook_now(
        subscription.subscription_id,
        test_webhook_payload(subscription, event_id, now),
        subscriptions=context.subscriptions,
        client=context.webhook_client,
        tenant_id=tenant_id,
        clock=lambda: now,
    )
    attempt = sent.attempt
    return TestSendResult(
        subscription_id=subscription.subscription_id,
        event_id=event_id,
        webhook_id=sent.webhook_id,
        signatures=len(subscription.valid_secrets(now)),
        delivered=attempt.succeeded,
        status_code=attempt.status_code,
        error=attempt.error,
        detail=_detail(attempt.error),
        latency_ms=attempt.latency_ms,
        response_excerpt=attempt.response,
    )


def test_webhook_payload(subscription: Subscription, event_id: str, now: datetime) -> str:
    """A synthetic outcome (outcome schema v1, type `jobhooks.test`) for the subscription."""
    # Only test sends build an outcome here: its models stay out of the API's cold start.
    from jobhooks.inbound.outcome_models import FetcherContext, Outcome, WebhookBody

    timestamp = format_time(now)
    outcome = Outcome(
        timestamp_utc=timestamp,
        event_id=event_id,
        release="unknown",
        account_id=subscription.tenant_id,
        job_id=event_id.rsplit(".", 1)[-1],
        job_name=TEST_JOB_NAME,
        queue_name=TEST_JOB_NAME,
        attempt_count=1,
        queue_wait_ms=0,
        duration_ms=0,
        status="success",
        # No job ran: nothing was measured but the identifiers and the time.
        unmeasured=["release", "job_name", "queue_wait_ms", "duration_ms"],
        fetcher=FetcherContext(
            metadata={
                "source": TEST_JOB_NAME,
                "subscription_id": subscription.subscription_id,
                "sent_by": f"jobhooks/{__version__}",
            }
        ),
    )
    body = WebhookBody(type=TEST_EVENT_TYPE, timestamp=timestamp, data=outcome)
    return body.model_dump_json(exclude_none=True)


def subscription_view(subscription: Subscription, now: datetime) -> SubscriptionView:
    return SubscriptionView.model_validate(_view_fields(subscription, now))


def _with_secret(context: ManagementContext, issued: IssuedSecret) -> SubscriptionWithSecret:
    fields = _view_fields(issued.subscription, context.clock())
    return SubscriptionWithSecret.model_validate({**fields, "secret": issued.secret})


def _view_fields(subscription: Subscription, now: datetime) -> dict[str, Any]:
    return {
        "subscription_id": subscription.subscription_id,
        "tenant_id": subscription.tenant_id,
        "url": subscription.url,
        "event_types": list(subscription.event_types),
        "job_names": list(subscription.job_names),
        "status": subscription.status,
        "description": subscription.description,
        "disabled_reason": subscription.disabled_reason,
        "created_at": format_time(subscription.created_at),
        "updated_at": format_time(subscription.updated_at),
        # Expired secrets stay in the item until its next write; they no longer sign.
        "secrets": [
            SecretInfo(
                secret_id=secret.secret_id,
                created_at=format_time(secret.created_at),
                expires_at=format_time(secret.expires_at) if secret.expires_at else None,
            )
            for secret in subscription.valid_secrets(now)
        ],
    }


_ERROR_DETAILS = {
    "dns_error": "the receiver's host name did not resolve",
    "address_not_public": "the receiver's host resolves to an address webhooks may not go to",
    "url_not_allowed": "the network policy refuses the receiver's URL",
    "connect_error": "no connection could be made to the receiver",
    "tls_error": "the TLS handshake with the receiver failed",
    "timeout": "the receiver did not answer in time",
    "protocol_error": "the receiver's answer was not valid HTTP",
    "signing_error": "the subscription has no secret that can sign; rotate its secret",
}


def _detail(error: str | None) -> str | None:
    return _ERROR_DETAILS.get(error, error) if error else None
