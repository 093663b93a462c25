"""`EndpointHealthObserver`: every settled attempt, judged by the rules, in the order they apply.

It hears of each attempt the deliver function or ingest's first attempt settled
(`delivery.settle.SettlementObserver`), with the subscription as that process read it:

0. notifications the subscription owes (`owed`: their sending failed before) are sent again;
1. a 410 that disabled the subscription (this very settle did): `endpoint.disabled`, `gone`;
2. a delivery parked after its last attempt: `delivery.exhausted` (`exhausted`);
3. a failed attempt (not `signing_error`: the bridge's own secrets, unreadable, say nothing
   about the endpoint): counted (`store.record_failure`), then `failing` (the threshold reached:
   `endpoint.failing`, once per run) and `sustained_failure` (every attempt failed for
   `auto_disable_after`: the subscription disabled and `endpoint.disabled`, once);
4. a success: nothing at all when the subscription as read has no run of failures (the common
   case: no write); else the run is cleared, and when it had been notified as failing,
   `endpoint.recovered` (`recovered`).

Each state change is one conditional write; only its writer notifies. A subscription read from a
warm process's cache may be a few seconds old (the deliver function keeps the item a failure's
write returns, and reads it afresh after any other outcome but a success on a healthy endpoint:
`delivery.subscription_cache`): a success then sees a run of failures another
process began meanwhile only at its next read (the consecutive count may run on a few seconds
longer), and a run this process cleared is not cleared again while its cache still shows it.

A notification that cannot be enqueued (or published to the operators) is not lost, and the
attempt's outcome, recorded already, stands: the notification is kept on its endpoint's item
(`owed`) and sent again, with the same key and time, by the next settle of a delivery to that
endpoint that reads it (0., before the rules), a skipped one included.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

from jobhooks.delivery.model import (
    DeliveryOutcome,
    DeliveryResult,
    FailureClass,
    failure_class_of,
    result_label,
)
from jobhooks.delivery_task import DeliveryTask
from jobhooks.endpoint_health.disabled import DisableCause, disabled_data, disabled_key
from jobhooks.endpoint_health.exhausted import (
    exhausted_data,
    exhausted_key,
    is_exhausted,
    is_notification,
)
from jobhooks.endpoint_health.failing import becomes_failing, failing_data, failing_key
from jobhooks.endpoint_health.model import EndpointHealth, HealthThresholds
from jobhooks.endpoint_health.owed import OwedNotification
from jobhooks.endpoint_health.recovered import (
    needs_reset,
    recovered_data,
    recovered_key,
    recovers,
)
from jobhooks.endpoint_health.sustained_failure import is_sustained, sustained_reason
from jobhooks.notifications.exceptions import NotificationNotSentError
from jobhooks.storage.times import utc_now
from jobhooks.subscriptions.model import EventType, Subscription

_log = logging.getLogger("jobhooks.endpoint_health")


class OwedWrites(Protocol):
    """Where owed notifications are kept (`store.HealthRecords`; the management functions use
    `SubscriptionStore`, whose whole-item writes they are granted)."""

    def owe(self, subscription_id: str, notification: OwedNotification) -> bool: ...

    def sent_owed(self, subscription_id: str, notification: OwedNotification) -> bool: ...


class HealthWrites(OwedWrites, Protocol):
    """What the observer writes (`store.HealthRecords`)."""

    def record_failure(
        self, subscription_id: str, at: datetime
    ) -> tuple[EndpointHealth, bool] | None: ...

    def mark_failing(self, subscription_id: str, failing_after: int) -> bool: ...

    def clear_after_success(self, subscription_id: str) -> EndpointHealth | None: ...


class Disabler(Protocol):
    def disable_once(
        self,
        subscription_id: str,
        reason: str,
        *,
        tenant_id: str | None = None,
        while_failing_since: datetime | None = None,
    ) -> Subscription | None: ...


class Notify(Protocol):
    def notify(
        self,
        tenant_id: str,
        type: str,
        data: Mapping[str, Any],
        about_subscription: str | None = None,
        *,
        key: str | None = None,
        at: datetime | None = None,
    ) -> Any: ...


class EndpointHealthObserver:
    """One per process; thread safe."""

    def __init__(
        self,
        *,
        records: HealthWrites,
        subscriptions: Disabler,
        notifier: Notify,
        thresholds: HealthThresholds,
        cache_seconds: float = 0.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """`cache_seconds`: how old a subscription this process read may be (its cache)."""
        self.records = records
        self.subscriptions = subscriptions
        self.notifier = notifier
        self.thresholds = thresholds
        self._cache_seconds = cache_seconds
        self._monotonic = monotonic
        self._cleared: dict[str, float] = {}
        # Owed notifications this process is sending or sent lately (its cache may still show
        # them): by subscription and attribute, until when.
        self._resent: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def settled(
        self, task: DeliveryTask, outcome: DeliveryOutcome, subscription: Subscription | None
    ) -> None:
        if subscription is not None and subscription.health.owed:
            self.send_owed(subscription)
        if outcome.result is DeliveryResult.GONE:
            if outcome.disabled_subscription:
                self._disabled_as_gone(task, outcome)
            return
        if is_exhausted(outcome):
            self._exhausted(task, outcome)
        attempt = outcome.attempt
        if attempt is None or outcome.result is DeliveryResult.DUPLICATE:
            return
        if failure_class_of(attempt) is FailureClass.SIGNING_ERROR:
            return  # the bridge could not read its own secrets: nothing about the endpoint
        if attempt.succeeded:
            self._succeeded(task, subscription, attempt.at)
        else:
            self._failed(task, result_label(attempt), attempt.at)

    # -- the rules, in order -----------------------------------------------------------------

    def _disabled_as_gone(self, task: DeliveryTask, outcome: DeliveryOutcome) -> None:
        at = outcome.attempt.at if outcome.attempt is not None else None
        if at is None:
            return
        self._notify(
            task.tenant_id,
            EventType.ENDPOINT_DISABLED,
            disabled_data(
                task.subscription_id, DisableCause.GONE, f"answered 410 to {task.delivery_id}", at
            ),
            task.subscription_id,
            disabled_key(task.subscription_id, at),
        )

    def _exhausted(self, task: DeliveryTask, outcome: DeliveryOutcome) -> None:
        if is_notification(task):
            _log.warning(
                "a notification's delivery used its last attempt; no notification is sent about it",
                extra={"delivery_id": task.delivery_id, "subscription_id": task.subscription_id},
            )
            return
        self._notify(
            task.tenant_id,
            EventType.DELIVERY_EXHAUSTED,
            exhausted_data(task, outcome),
            task.subscription_id,
            exhausted_key(task, outcome),
        )

    def _failed(self, task: DeliveryTask, last_result: str, at: datetime) -> None:
        subscription_id = task.subscription_id
        with self._lock:
            self._cleared.pop(subscription_id, None)
        recorded = self.records.record_failure(subscription_id, at)
        if recorded is None:
            return  # deleted meanwhile
        health, active = recorded
        if not active:
            return
        if becomes_failing(health, self.thresholds) and self.records.mark_failing(
            subscription_id, self.thresholds.failing_after
        ):
            self._notify(
                task.tenant_id,
                EventType.ENDPOINT_FAILING,
                failing_data(subscription_id, health, last_result, at),
                subscription_id,
                failing_key(subscription_id, health, at),
            )
        if is_sustained(health, at, self.thresholds):
            reason = sustained_reason(health, at)
            disabled = self.subscriptions.disable_once(
                subscription_id,
                reason,
                tenant_id=task.tenant_id,
                while_failing_since=health.failing_since,
            )
            if disabled is None:
                return
            _log.warning(
                "endpoint disabled after sustained failure",
                extra={"subscription_id": subscription_id, "tenant_id": task.tenant_id},
            )
            self._notify(
                task.tenant_id,
                EventType.ENDPOINT_DISABLED,
                disabled_data(subscription_id, DisableCause.SUSTAINED_FAILURE, reason, at),
                subscription_id,
                disabled_key(subscription_id, at),
            )

    def _succeeded(
        self, task: DeliveryTask, subscription: Subscription | None, at: datetime
    ) -> None:
        if subscription is None or subscription.subscription_id != task.subscription_id:
            return
        if not needs_reset(subscription.health) or self._cleared_lately(task.subscription_id):
            return
        before = self.records.clear_after_success(task.subscription_id)
        with self._lock:
            self._cleared[task.subscription_id] = self._monotonic() + self._cache_seconds
        if before is None or not recovers(before):
            return
        self._notify(
            task.tenant_id,
            EventType.ENDPOINT_RECOVERED,
            recovered_data(task.subscription_id, before, at),
            task.subscription_id,
            recovered_key(task.subscription_id, before),
        )

    # -- what was owed ------------------------------------------------------------------------

    def send_owed(self, subscription: Subscription) -> int:
        """Send again what `subscription` (as read) owes, oldest first; how many went out."""
        sent = 0
        for owed in subscription.health.owed:
            if owed.tenant_id != subscription.tenant_id:
                continue  # never across tenants (its own notifications are the only ones kept)
            memo = (subscription.subscription_id, owed.attribute)
            if not self._start_resend(memo):
                continue
            went = send_owed(self.records, self.notifier, subscription.subscription_id, owed)
            with self._lock:
                if went:
                    self._resent[memo] = self._monotonic() + self._cache_seconds
                else:
                    self._resent.pop(memo, None)
            sent += went
        return sent

    def _start_resend(self, memo: tuple[str, str]) -> bool:
        with self._lock:
            until = self._resent.get(memo)
            if until is not None and self._monotonic() < until:
                return False  # being sent by another thread, or sent lately
            self._resent[memo] = float("inf")
            return True

    # -- internals ---------------------------------------------------------------------------

    def _cleared_lately(self, subscription_id: str) -> bool:
        with self._lock:
            until = self._cleared.get(subscription_id)
            if until is None:
                return False
            if self._monotonic() < until:
                return True
            del self._cleared[subscription_id]
            return False

    def _notify(
        self,
        tenant_id: str,
        kind: EventType,
        data: Mapping[str, Any],
        about_subscription: str,
        key: str,
    ) -> None:
        try:
            self.notifier.notify(tenant_id, kind.value, data, about_subscription, key=key)
        except Exception as error:  # the outcome stands; the notification is kept, not lost
            at = error.at if isinstance(error, NotificationNotSentError) else None
            owe_notification(
                self.records,
                OwedNotification(
                    tenant_id=tenant_id,
                    type=kind.value,
                    data=dict(data),
                    about_subscription=about_subscription,
                    key=key,
                    at=at or utc_now(),
                ),
            )


def send_owed(
    records: OwedWrites, notifier: Notify, subscription_id: str, owed: OwedNotification
) -> bool:
    """Send one owed notification again (same key and time), then remove it from the item;
    False when it could not be sent (it stays owed)."""
    extra = {"notification_type": owed.type, "subscription_id": subscription_id}
    try:
        notifier.notify(
            owed.tenant_id,
            owed.type,
            owed.data,
            owed.about_subscription,
            key=owed.key,
            at=owed.at,
        )
    except Exception:  # still owed: the next read of the endpoint tries again
        _log.exception("owed notification not sent yet", extra=extra)
        return False
    try:
        records.sent_owed(subscription_id, owed)
    except Exception:  # sent: a second send has the same ids, which deliver deduplicates
        _log.exception("owed notification sent but still kept", extra=extra)
    _log.info("owed notification sent", extra=extra)
    return True


def send_everything_owed(records: OwedWrites, notifier: Notify, subscription: Subscription) -> int:
    """Send what `subscription` (as read) owes, oldest first (no memo: a one-off caller, such
    as `recover`); how many went out."""
    return sum(
        send_owed(records, notifier, subscription.subscription_id, owed)
        for owed in subscription.health.owed
        if owed.tenant_id == subscription.tenant_id
    )


def owe_notification(records: OwedWrites, notification: OwedNotification) -> None:
    """Keep a notification whose sending failed on the item of the endpoint it is about."""
    about = notification.about_subscription
    assert about is not None, "an endpoint notification is about an endpoint"
    try:
        kept = records.owe(about, notification)
    except Exception:  # both SQS (or SNS) and DynamoDB failed: nothing left to keep it in
        _log.exception(
            "notification lost: neither sent nor kept",
            extra={"notification_type": notification.type, "subscription_id": about},
        )
        return
    _log.warning(
        "notification not sent; kept to be sent again"
        if kept
        else "notification not sent; its subscription was deleted",
        extra={"notification_type": notification.type, "subscription_id": about},
    )
