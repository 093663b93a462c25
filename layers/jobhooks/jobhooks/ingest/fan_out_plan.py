"""An event's fan-out, decided before its claim: the webhook payload built once, the tenant's
matching subscriptions (cached), and one delivery task per subscription its job filter admits.

Decided first so that the claim's one write records it (`FanOutPlan`) and no later write per
event is needed (docs/cost.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobhooks.delivery_task import DeliveryTask
from jobhooks.inbound.event import JobEvent
from jobhooks.inbound.outcome import OutcomeData, outcome_data, payload_json
from jobhooks.ingest.fan_out import delivery_tasks_for
from jobhooks.ingest.model import FanOutPlan
from jobhooks.subscriptions.model import Subscription

if TYPE_CHECKING:
    from jobhooks.ingest.ports import SubscriptionMatcher


# A plain class: `@dataclass` compiles its generated methods at import (about 1 ms of the cold
# start on Python 3.12), and this record, which the service reads field by field, uses none but
# `__init__`.
class PlannedFanOut:
    """An event's fan-out, decided before its claim: the outcome, the plan, the tasks.

    The outcome is data (`outcome_data`): the payload is serialized from it, and the analytics
    row is built from it. Validating it into the `Outcome` model too, on every message, cost
    more than the rest of the payload; the row model checks the columns' types itself."""

    __slots__ = ("outcome", "plan", "subscriptions", "tasks")

    def __init__(
        self,
        outcome: OutcomeData,
        plan: FanOutPlan,
        tasks: tuple[DeliveryTask, ...],
        subscriptions: tuple[Subscription, ...],
    ) -> None:
        self.outcome = outcome
        self.plan = plan
        self.tasks = tasks
        # The subscription of each task, as matched (same order).
        self.subscriptions = subscriptions


def plan_fan_out(
    event: JobEvent,
    *,
    batch_id: str,
    subscriptions: SubscriptionMatcher,
    producer_release: str,
) -> PlannedFanOut:
    outcome = outcome_data(event, release=producer_release)
    payload = payload_json(event.event_type, outcome)
    matched = subscriptions.matching(event.tenant_id, event.event_type)
    tasks = delivery_tasks_for(
        event_id=event.event_id,
        tenant_id=event.tenant_id,
        event_type=event.event_type,
        payload=payload,
        subscriptions=matched,
        job_name=None if "job_name" in outcome["unmeasured"] else outcome["job_name"],
    )
    by_id = {subscription.subscription_id: subscription for subscription in matched}
    return PlannedFanOut(
        outcome,
        FanOutPlan(batch_id, payload, tuple(task.subscription_id for task in tasks)),
        tasks,
        tuple(by_id[task.subscription_id] for task in tasks),
    )
