"""One attempt: the subscription's signing secrets read, the task's payload POSTed, signed.

The deliver function, ingest's first attempts (`first_attempt`) and the one-off test send all
POST through here, so a webhook is the same bytes with the same headers whoever sends it: the
payload byte for byte, Standard Webhooks headers signed by every active secret, a fresh
`webhook-timestamp` and the task's fixed `webhook-id`. What the answer means for the delivery
is `settle`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from jobhooks.delivery.model import DeliveryAttempt, FailureClass
from jobhooks.delivery_task import DeliveryTask
from jobhooks.subscriptions.exceptions import SubscriptionError
from jobhooks.subscriptions.model import Subscription
from jobhooks.webhook_signature import webhook_headers

if TYPE_CHECKING:
    from jobhooks.delivery.ports import SubscriptionDirectory, WebhookPoster

_log = logging.getLogger(__name__)


def attempt_delivery(
    task: DeliveryTask,
    subscription: Subscription,
    n: int,
    now: datetime,
    *,
    subscriptions: SubscriptionDirectory,
    client: WebhookPoster,
) -> tuple[DeliveryAttempt, int | None]:
    """Attempt `n` of the task to its subscription; the attempt and the receiver's Retry-After.

    Secrets that cannot be read make a failed attempt (`signing_error`) with no POST: the
    delivery is retried as after any other failure.
    """
    signing_secrets = signing_secrets_for(task, subscription, now, subscriptions)
    if not signing_secrets:
        return unsigned_attempt(n, now), None
    return post_signed(
        client, subscription.url, task.webhook_id, task.payload, signing_secrets, n, now
    )


def signing_secrets_for(
    task: DeliveryTask,
    subscription: Subscription,
    now: datetime,
    subscriptions: SubscriptionDirectory,
) -> list[str]:
    """The subscription's active signing secrets; none when they cannot be read (logged)."""
    try:
        return subscriptions.signing_secrets(subscription, now)
    except SubscriptionError as error:
        _log.error(
            "cannot read the subscription's signing secrets: %s",
            error.code,
            extra={"delivery_id": task.delivery_id, "subscription_id": task.subscription_id},
        )
        return []


def unsigned_attempt(n: int, now: datetime) -> DeliveryAttempt:
    """The failed attempt of a delivery whose secrets could not be read (no POST)."""
    return DeliveryAttempt(n=n, at=now, error=FailureClass.SIGNING_ERROR.value)


def post_signed(
    client: WebhookPoster,
    url: str,
    webhook_id: str,
    payload: str,
    signing_secrets: Sequence[str],
    n: int,
    now: datetime,
    *,
    timeout: float | None = None,
) -> tuple[DeliveryAttempt, int | None]:
    """POST `payload` signed with every secret; the attempt and the receiver's Retry-After.

    `timeout` shortens the client's total timeout for this POST (ingest's first attempts).
    """
    body = payload.encode("utf-8")
    headers = webhook_headers(webhook_id, int(now.timestamp()), body, signing_secrets)
    result = client.post(url, body, headers, timeout=timeout)
    attempt = DeliveryAttempt(
        n=n,
        at=now,
        status_code=result.status_code,
        error=result.error.value if result.error is not None else None,
        latency_ms=result.latency_ms,
        response=result.response_excerpt,
    )
    return attempt, result.retry_after_seconds
