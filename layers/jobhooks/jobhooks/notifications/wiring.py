"""A `Notifier` over real clients, from `NotificationSettings`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from jobhooks.delivery_queue import DeliveryQueue
from jobhooks.notifications.notifier import Notifier
from jobhooks.notifications.operations_topic import SnsOperationsTopic
from jobhooks.notifications.settings import NotificationSettings
from jobhooks.storage.clients import aws_client
from jobhooks.storage.times import utc_now
from jobhooks.subscriptions.store import SubscriptionStore


def build_notifier(
    settings: NotificationSettings,
    *,
    session: Any = None,
    clock: Callable[[], datetime] = utc_now,
) -> Notifier:
    # Matching reads the table only: no KMS call is made (secrets are opened by deliver).
    subscriptions = SubscriptionStore(
        settings.subscriptions_table,
        aws_client("dynamodb", session=session),
        aws_client("kms", session=session),
        clock=clock,
    )
    operations = (
        SnsOperationsTopic(settings.operations_topic_arn, aws_client("sns", session=session))
        if settings.operations_topic_arn
        else None
    )
    return Notifier(
        subscriptions=subscriptions,
        deliveries=DeliveryQueue(settings.delivery_queue_url, aws_client("sqs", session=session)),
        operations=operations,
        clock=clock,
    )
