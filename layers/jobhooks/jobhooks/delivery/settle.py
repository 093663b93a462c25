"""Settling an attempt: what becomes of a delivery once its POST has answered (docs/delivery.md).

One step for both places an attempt is made, the deliver function (a delivery-queue message)
and ingest's first attempt (`first_attempt`), so the rules live once:

- succeeded (2xx): kept by the attempt's source (the attempt log for a queued task, the
  subscription's page for a first attempt);
- gone (410): the subscription is disabled and the delivery recorded `gone`;
- failed with attempts left: recorded `pending`, and the source defers the next try by the retry
  schedule's delay (a queued task's message is hidden; a first attempt's task is enqueued with
  that delay);
- failed on the last attempt (or parked for another reason by the deliver function): recorded
  `parked`, and the task goes to the delivery DLQ with why.

Every outcome is recorded with one conditional write on the delivery (`DeliveryLog`); one the
condition refuses (a duplicate task settled it first) is a `duplicate`. A `SettlementObserver`
hears of every settled attempt after it is recorded, with the subscription as the caller read
it: the place for notifications that follow a delivery's state (`jobhooks.endpoint_health`: an
endpoint disabled, failing or recovered; a delivery exhausted).
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from jobhooks.delivery.model import (
    DeliveryAttempt,
    DeliveryOutcome,
    DeliveryRecord,
    DeliveryResult,
    DeliveryStatus,
    FailureClass,
    failure_class_of,
    result_label,
)
from jobhooks.delivery.retry_schedule import DEFAULT_SCHEDULE, RetrySchedule, UniformRandom
from jobhooks.delivery_task import DeliveryTask
from jobhooks.subscriptions.exceptions import SubscriptionNotFoundError
from jobhooks.subscriptions.model import Subscription

if TYPE_CHECKING:
    from jobhooks.delivery.parking import ParkReason
    from jobhooks.delivery.ports import DeadLetters, DeliveryLog, SubscriptionDirectory

_log = logging.getLogger(__name__)


class AttemptSource(Protocol):
    """Where an attempt came from: how its success is kept and its next try deferred."""

    @property
    def logged_attempts(self) -> int:
        """Attempts the delivery's record already holds (the record's condition checks it)."""

    def record_success(self, task: DeliveryTask, attempt: DeliveryAttempt) -> None: ...

    def retry_later(self, task: DeliveryTask, delay_seconds: int) -> int:
        """Bring the task back after `delay_seconds`; the delay in effect (a queue's limit)."""

    def parked_body(self, task: DeliveryTask) -> str:
        """The delivery DLQ message's body: the task as it will be redriven."""


class SettlementObserver(Protocol):
    """Told of each settled attempt, after its outcome is recorded, with the subscription as
    the caller read it (None when it had none); must not raise."""

    def settled(
        self, task: DeliveryTask, outcome: DeliveryOutcome, subscription: Subscription | None
    ) -> None: ...


class Settlement:
    """Settles attempts (module docstring). One per process; thread safe."""

    def __init__(
        self,
        *,
        attempt_log: DeliveryLog,
        subscriptions: SubscriptionDirectory,
        dead_letters: DeadLetters,
        schedule: RetrySchedule = DEFAULT_SCHEDULE,
        random_source: UniformRandom = random.random,
        observers: Sequence[SettlementObserver] = (),
    ) -> None:
        self._log = attempt_log
        self.attempt_log = attempt_log
        self._subscriptions = subscriptions
        self._dead_letters = dead_letters
        self.schedule = schedule
        self._random = random_source
        self._random_lock = threading.Lock()
        self.observers = list(observers)

    def settle(
        self,
        task: DeliveryTask,
        attempt: DeliveryAttempt,
        source: AttemptSource,
        *,
        retry_after: int | None = None,
        subscription: Subscription | None = None,
    ) -> DeliveryOutcome:
        """Record what the attempt came to and act on it; `retry_after` is the receiver's,
        `subscription` the one the attempt was made to (as read), for the observers."""
        failure = failure_class_of(attempt)
        if failure is None:
            source.record_success(task, attempt)
            return self._told(
                task,
                DeliveryOutcome(DeliveryResult.SUCCEEDED, task.delivery_id, attempt),
                subscription,
            )
        if failure is FailureClass.HTTP_410:
            return self._told(task, self._gone(task, attempt, source), subscription)
        if self.schedule.is_last(attempt.n):
            # Here, not at import: ingest's first attempts settle through this module, and its
            # first attempt is hardly ever a delivery's last (the deliver function parks).
            from jobhooks.delivery.parking import ParkReason

            return self.park(
                task, attempt, ParkReason.ATTEMPTS_EXHAUSTED, source, subscription=subscription
            )
        with self._random_lock:  # `random.random` is safe; an injected source may not be
            delay = self.schedule.delay_after(
                attempt.n, retry_after=retry_after, random=self._random
            )
        logged = source.logged_attempts
        if not self._log.record_attempt(
            task, DeliveryStatus.PENDING, attempt, logged_attempts=logged
        ):
            return self._told(
                task,
                DeliveryOutcome(DeliveryResult.DUPLICATE, task.delivery_id, attempt, failure),
                subscription,
            )
        delay = source.retry_later(task, delay)
        return self._told(
            task,
            DeliveryOutcome(
                DeliveryResult.RETRY_SCHEDULED, task.delivery_id, attempt, failure, delay
            ),
            subscription,
        )

    def park(
        self,
        task: DeliveryTask,
        attempt: DeliveryAttempt | None,
        reason: ParkReason,
        source: AttemptSource,
        *,
        existing: DeliveryRecord | None = None,
        subscription: Subscription | None = None,
    ) -> DeliveryOutcome:
        """Record the delivery `parked`, then put it in the delivery DLQ with why."""
        from jobhooks.delivery.parking import ParkingSummary

        # Recorded first: the condition refuses to park a delivery a duplicate already made.
        if not self._log.record_attempt(
            task,
            DeliveryStatus.PARKED,
            attempt,
            reason=reason.value,
            logged_attempts=source.logged_attempts,
        ):
            return self._told(
                task,
                DeliveryOutcome(DeliveryResult.DUPLICATE, task.delivery_id, attempt),
                subscription,
            )
        last = attempt or (existing.last_attempt if existing is not None else None)
        attempts = attempt.n if attempt is not None else existing.attempt_count if existing else 0
        self._dead_letters.park(
            source.parked_body(task),
            ParkingSummary(reason, attempts, result_label(last) if last else None),
        )
        _log.warning("delivery parked: %s", reason.value, extra=task_fields(task))
        failure = failure_class_of(attempt) if attempt is not None else None
        return self._told(
            task,
            DeliveryOutcome(DeliveryResult.PARKED, task.delivery_id, attempt, failure),
            subscription,
        )

    def skip(self, task: DeliveryTask, subscription: Subscription | None) -> DeliveryOutcome:
        """Record the delivery `skipped` (its subscription is disabled: `skipped`) and tell
        the observers, with the subscription as read: no attempt, yet a read of the endpoint
        (a notification it owes is sent then)."""
        # Imported here: `skipped` imports this module's `task_fields`.
        from jobhooks.delivery.skipped import skip_delivery

        return self._told(task, skip_delivery(self._log, task), subscription)

    def _gone(
        self, task: DeliveryTask, attempt: DeliveryAttempt, source: AttemptSource
    ) -> DeliveryOutcome:
        disabled = None
        # Deleted meanwhile: nothing left to disable, the delivery is gone all the same.
        with contextlib.suppress(SubscriptionNotFoundError):
            disabled = self._subscriptions.disable_once(
                task.subscription_id,
                f"the endpoint answered 410 Gone to delivery {task.delivery_id} "
                f"at {attempt.at.isoformat()}",
            )
        _log.warning("receiver answered 410 Gone; subscription disabled", extra=task_fields(task))
        self._log.record_attempt(
            task,
            DeliveryStatus.GONE,
            attempt,
            reason="gone",
            logged_attempts=source.logged_attempts,
        )
        return DeliveryOutcome(
            DeliveryResult.GONE,
            task.delivery_id,
            attempt,
            FailureClass.HTTP_410,
            disabled_subscription=disabled is not None,
        )

    def _told(
        self, task: DeliveryTask, outcome: DeliveryOutcome, subscription: Subscription | None
    ) -> DeliveryOutcome:
        for observer in self.observers:
            try:
                observer.settled(task, outcome, subscription)
            except Exception:  # an observer must never undo a recorded outcome
                _log.exception("a settlement observer raised", extra=task_fields(task))
        return outcome


def task_fields(task: DeliveryTask) -> dict[str, str]:
    """A task's ids for a log line: never its URL (it may carry a token) or its payload."""
    return {
        "delivery_id": task.delivery_id,
        "event_id": task.event_id,
        "subscription_id": task.subscription_id,
        "tenant_id": task.tenant_id,
    }
