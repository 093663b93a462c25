"""Notifications: what jobhooks itself tells a tenant and its operators, as signed webhooks.

An endpoint that breaks or recovers, a delivery that used its last attempt, a job whose health
crossed an alert rule: each is one `notify(tenant, type, data, about_subscription=None)` call
(`Notifier.notify`). It goes out

- to the same tenant's subscriptions that list its type (never across tenants, never to the
  subscription it is about), as one delivery each through the delivery queue and the deliver
  function: the same `{type, timestamp, data}` envelope and Standard Webhooks signing as a job
  webhook, the same retries, attempt log and dead-letter queue;
- to the operators, on the stack's SNS topic (`OperationsTopicArn`), for every tenant.

`model` builds the body and the ids (pure), `notifier` fans out and publishes, `operations_topic`
is the SNS adapter, `wiring` builds a notifier from `JOBHOOKS_*` (docs/notifications.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from jobhooks.moved_names import moved_name
from jobhooks.notifications.exceptions import NotificationError, NotificationNotSentError

if TYPE_CHECKING:
    from jobhooks.notifications.model import Notification

__all__ = ["Notification", "NotificationError", "NotificationNotSentError"]


# `Notification` on first use: every function's settings import this package
# (`notifications.settings`), and only a notification being sent needs the model.
_MOVED: Final = {"Notification": "jobhooks.notifications.model"}


def __getattr__(name: str) -> Any:
    return moved_name(__name__, name, _MOVED)
