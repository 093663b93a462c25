"""Skipped deliveries: what a disabled endpoint would have received is kept, never dropped.

While a subscription is disabled, whatever the reason (the tenant or an operator disabled it,
its receiver answered 410, its deliveries failed for too long), each event it would have
received is recorded as a delivery in status `skipped` (`status_reason`
`subscription_disabled`), with no POST. It is listed with the subscription's other deliveries
(`GET /v1/deliveries`, `jobhooks deliveries list`), and `jobhooks webhooks recover` sends it
once the endpoint is active again (`recovery`).

Where the rule is met:

- ingest matches a tenant's disabled subscriptions too (`SubscriptionStore(match_disabled=True)`,
  the same one Query that finds the active ones: no extra read), so each event gets a task for
  them like any other; its first-attempt stage (`first_attempt`) records the task `skipped`
  instead of POSTing or enqueueing it;
- the deliver function records `skipped`, and acks, a task whose subscription it finds disabled
  (a retry scheduled before the disable, a re-fan-out, a notification, ingest without first
  attempts).

So a skipped delivery costs one attempt-log write, and only while an endpoint is disabled: an
active endpoint's deliveries are unchanged (docs/cost.md). A disable made in another process is
seen once the matching cache (`SubscriptionCacheSeconds`) forgets the subscription; until then
its events are attempted as before. A delivery that already succeeded is never turned into a
skipped one (the attempt log's condition).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

from jobhooks.delivery.model import DeliveryOutcome, DeliveryResult, DeliveryStatus
from jobhooks.delivery.settle import task_fields
from jobhooks.delivery_task import DeliveryTask

if TYPE_CHECKING:
    from jobhooks.delivery.ports import DeliveryLog

SKIPPED_REASON: Final = "subscription_disabled"

_log = logging.getLogger(__name__)


def skip_delivery(log: DeliveryLog, task: DeliveryTask) -> DeliveryOutcome:
    """Record the task's delivery `skipped`: its subscription is disabled. No POST is made."""
    if not log.record_attempt(task, DeliveryStatus.SKIPPED, reason=SKIPPED_REASON):
        return DeliveryOutcome(DeliveryResult.DUPLICATE, task.delivery_id)
    _log.info("delivery skipped: the subscription is disabled", extra=task_fields(task))
    return DeliveryOutcome(DeliveryResult.SKIPPED, task.delivery_id)
