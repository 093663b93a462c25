"""Fan-out: one delivery task per matching subscription.

Every task of an event carries the same payload (the webhook body, built once), and ids derived
from (event, subscription), so sending a task twice (a retried fan-out) produces the same
`delivery_id`, which the deliver side deduplicates. The tasks go onto the delivery queue through
`jobhooks.delivery_queue`, which the management API and notifications enqueue through as well.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from jobhooks.delivery_task import DeliveryTask, delivery_tasks_for_subscriptions
from jobhooks.subscriptions.model import Subscription


def job_name_of(payload: str) -> str | None:
    """The job_name of a stored webhook payload, None when it was not measured: the job
    filter of a re-fan-out judges the event as its first fan-out did."""
    data = json.loads(payload).get("data", {})
    if "job_name" in data.get("unmeasured", ()):
        return None
    job_name = data.get("job_name")
    return job_name if isinstance(job_name, str) else None


def delivery_tasks_for(
    *,
    event_id: str,
    tenant_id: str,
    event_type: str,
    payload: str,
    subscriptions: Iterable[Subscription],
    job_name: str | None = None,
    replay: bool = False,
) -> tuple[DeliveryTask, ...]:
    """One task per subscription whose job filter admits `job_name` (None: unmeasured);
    `replay` asks deliver to POST even after a recorded success."""
    tasks = delivery_tasks_for_subscriptions(
        event_id=event_id,
        tenant_id=tenant_id,
        event_type=event_type,
        payload=payload,
        subscription_ids=[
            subscription.subscription_id
            for subscription in subscriptions
            # The store already filtered by tenant; a task for another tenant must never exist.
            if subscription.tenant_id == tenant_id and subscription.wants_job(job_name)
        ],
    )
    if replay:
        return tuple(task.model_copy(update={"replay": True}) for task in tasks)
    return tasks
