"""`Notifier.notify`: one notification to the tenant's subscriptions that want it, and to the
operators.

In the order a notification flows:

1. the tenant's active subscriptions that list the type (`SubscriptionMatcher.matching`, the
   same query as a job event's fan-out: one tenant's index partition, never another's), minus
   the subscription the notification is about, minus those whose job filter excludes its job;
2. one delivery task each, with the notification's body, onto the delivery queue: the deliver
   function signs and POSTs it as any job webhook, retries it, logs its attempts;
3. the operators' message on the SNS topic, when the stack has one;
4. a log line (`notification sent`), which `jobhooks dev` shows on its console.

A failure of 2 or 3 raises `NotificationNotSentError`: the caller calls again with the same key
and time, which gives the same delivery ids and body (deliver drops one already delivered). The
alert evaluator does so at its next evaluation (the rule's state is saved only once sent); an
endpoint's notification is kept on its item until sent (`jobhooks.endpoint_health.owed`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from jobhooks.delivery_task import DeliveryTask, delivery_task_for
from jobhooks.notifications.exceptions import NotificationNotSentError
from jobhooks.notifications.model import Notification, parse_notification_type
from jobhooks.queued_task import QueuedTask
from jobhooks.storage.times import utc_now
from jobhooks.subscriptions.model import Subscription

_log = logging.getLogger("jobhooks.notifications")


class SubscriptionMatcher(Protocol):
    def matching(self, tenant_id: str, event_type: str) -> Sequence[Subscription]: ...


class DeliveryTasks(Protocol):
    def enqueue(self, event_id: str, tasks: Sequence[QueuedTask]) -> int: ...


class OperationsChannel(Protocol):
    def publish(self, notification: Notification, *, deliveries: int) -> str: ...


@dataclass(frozen=True, slots=True)
class NotificationSent:
    notification_id: str
    subscription_ids: tuple[str, ...]
    published: bool
    """The operators' message went to the SNS topic."""


class Notifier:
    def __init__(
        self,
        *,
        subscriptions: SubscriptionMatcher,
        deliveries: DeliveryTasks,
        operations: OperationsChannel | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.subscriptions = subscriptions
        self.deliveries = deliveries
        self.operations = operations
        self._clock = clock

    def notify(
        self,
        tenant_id: str,
        type: str,
        data: Mapping[str, Any],
        about_subscription: str | None = None,
        *,
        key: str | None = None,
        at: datetime | None = None,
    ) -> NotificationSent:
        """Send one notification; `key` makes it the same one again when retried, and `at`
        (its first try's time: `NotificationNotSentError.at`) the same body."""
        notification = Notification(
            tenant_id=tenant_id,
            type=parse_notification_type(type),
            data=dict(data),
            at=at or self._clock(),
            about_subscription=about_subscription,
            key=key,
        )
        tasks = self.tasks_for(notification)
        try:
            if tasks:
                self.deliveries.enqueue(tasks[0].event_id, tasks)
            published = self._publish(notification, len(tasks))
        except Exception as error:
            _log.warning(
                "notification not sent",
                extra={
                    "notification_type": notification.type.value,
                    "tenant_id": tenant_id,
                    "error": type_and_code(error),
                },
            )
            raise NotificationNotSentError(
                notification.type.value, tenant_id, type_and_code(error), at=notification.at
            ) from error
        sent = NotificationSent(
            tasks[0].event_id if tasks else notification.event_id,
            tuple(task.subscription_id for task in tasks),
            published,
        )
        _log.info(
            "notification sent",
            extra={
                "notification_type": notification.type.value,
                "notification_id": sent.notification_id,
                "tenant_id": tenant_id,
                "about_subscription_id": about_subscription,
                "deliveries": len(tasks),
                "published": published,
            },
        )
        return sent

    def tasks_for(self, notification: Notification) -> tuple[DeliveryTask, ...]:
        """One delivery task per subscription of the tenant that wants the notification."""
        event_id, body = notification.event_id, notification.body()
        job_name = notification.job_name
        return tuple(
            delivery_task_for(
                event_id=event_id,
                tenant_id=notification.tenant_id,
                event_type=notification.type.value,
                payload=body,
                subscription_id=subscription.subscription_id,
            )
            for subscription in self.subscriptions.matching(
                notification.tenant_id, notification.type.value
            )
            # The store matched on the tenant already; checked here too, as fan-out does.
            if subscription.wants(notification.tenant_id, notification.type.value)
            and subscription.subscription_id != notification.about_subscription
            and (job_name is None or subscription.wants_job(job_name))
        )

    def _publish(self, notification: Notification, deliveries: int) -> bool:
        if self.operations is None:
            return False
        self.operations.publish(notification, deliveries=deliveries)
        return True


def type_and_code(error: Exception) -> str:
    """What went wrong, for a log line: the exception's code or class, never its arguments
    (an AWS message can quote a request)."""
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        if code:
            return str(code)
    return str(getattr(error, "code", None) or type(error).__name__)
