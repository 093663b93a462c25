"""`EndpointHealthObserver`: every settled attempt, judged by the rules, in the order they apply.

It hears of each attempt the deliver function or ingest's first attempt settled
(`delivery.settle.SettlementObserver`), with the subscription as that process read it:

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
warm process's cache may be a few seconds old (the deliver function reads it afresh after any
outcome but a success on a healthy endpoint): a success then sees a run of failures another
process began meanwhile only at its next read (the consecutive count may run on a few seconds
longer), and a run this process cleared is not cleared again while its cache still shows it.

A notification that cannot be enqueued is logged by the notifier (`notification not sent`) and
not retried: the attempt's outcome is recorded already, and an observer never undoes it.
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
from jobhooks.endpoint_health.recovered import (
    needs_reset,
    recovered_data,
    recovered_key,
    recovers,
)
from jobhooks.endpoint_health.sustained_failure import is_sustained, sustained_reason
from jobhooks.subscriptions.model import EventType, Subscription

_log = logging.getLogger("jobhooks.endpoint_health")


class HealthWrites(Protocol):
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
        self._lock = threading.Lock()

    def settled(
        self, task: DeliveryTask, outcome: DeliveryOutcome, subscription: Subscription | None
    ) -> None:
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
        except Exception:  # logged by the notifier; the outcome stands
            _log.exception(
                "endpoint notification failed",
                extra={"notification_type": kind.value, "subscription_id": about_subscription},
            )
