"""Recover: send a subscription's undelivered webhooks again since a time (docs/delivery.md).

The caller's scope is checked by the route; here the subscription must exist in that scope and
be active (a disabled one would only skip its deliveries again: 409 `subscription_not_active`),
and `since` must be a time with a zone, not in the future (422 `invalid_since`). One call sends
one page (`jobhooks.delivery.recovery`); the answer's `next_cursor` asks for the next.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

from jobhooks.management.context import ManagementContext
from jobhooks.management.exceptions import InvalidSinceError, SubscriptionNotActiveError
from jobhooks.management.models import RecoverRequest, RecoveryResult
from jobhooks.storage.times import format_time, to_stored_precision

if TYPE_CHECKING:
    from jobhooks.subscriptions.model import Subscription

# A caller's clock may run a little ahead of ours: only a time past this is "in the future".
CLOCK_SKEW: Final = timedelta(minutes=5)


def recover_subscription(
    context: ManagementContext,
    subscription_id: str,
    request: RecoverRequest,
    *,
    tenant_id: str | None = None,
) -> RecoveryResult:
    since = parse_since(request.since, context.clock())
    subscription = context.subscriptions.get(subscription_id, tenant_id=tenant_id)
    if not subscription.is_active:
        raise SubscriptionNotActiveError(subscription_id)
    if subscription.health.owed:
        _send_owed_notifications(context, subscription)
    page = context.recovery.recover(
        subscription.subscription_id, since, cursor=request.cursor, limit=request.limit
    )
    return RecoveryResult(
        subscription_id=subscription.subscription_id,
        since=format_time(since),
        sent=page.sent,
        by_status=page.by_status,
        unavailable=page.unavailable,
        next_cursor=page.next_cursor,
    )


def _send_owed_notifications(context: ManagementContext, subscription: Subscription) -> None:
    """What the endpoint owes its tenant's notification endpoints (an `endpoint.disabled`
    whose enqueue failed, say) goes out before its outage is sent again."""
    from jobhooks.endpoint_health.observer import send_everything_owed

    send_everything_owed(context.subscriptions, context.notifier, subscription)


def parse_since(text: str, now: datetime) -> datetime:
    """`since` as a UTC time; raises `InvalidSinceError` for anything else."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidSinceError(f"{text[:64]!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise InvalidSinceError(f"{text[:64]!r} has no time zone (add Z for UTC)")
    moment = to_stored_precision(moment.astimezone(UTC))
    if moment > now + CLOCK_SKEW:
        raise InvalidSinceError(f"{text[:64]!r} is in the future")
    return moment
