"""The deliver function's production wiring: settings in, the use case over AWS clients out.

The clients are made on their first call (`jobhooks.storage.clients`), so building the
`Deliverer` at import costs the cold start nothing but its thread pool.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from jobhooks.delivery.attempt_log import AttemptLog
from jobhooks.delivery.deliver import Deliverer
from jobhooks.delivery.first_attempts import FirstAttemptLog
from jobhooks.delivery.history import FirstAttemptSuccesses
from jobhooks.delivery.http_client import make_webhook_client
from jobhooks.delivery.queues import DeliveryDlq, DeliveryQueueMessages
from jobhooks.delivery.settings import DeliverSettings
from jobhooks.delivery.subscription_cache import (
    CacheKeepingHealthRecords,
    CacheKeepingSubscriptions,
    SubscriptionCache,
)
from jobhooks.endpoint_health.store import HealthRecords
from jobhooks.endpoint_health.wiring import build_health_observer
from jobhooks.storage.claim_reader import ClaimReader
from jobhooks.storage.clients import aws_client
from jobhooks.storage.times import utc_now
from jobhooks.subscriptions.store import SubscriptionStore

if TYPE_CHECKING:
    from jobhooks.delivery.ports import DeliveryMetrics


def build_deliverer(
    settings: DeliverSettings,
    *,
    metrics: DeliveryMetrics | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> Deliverer:
    """The `Deliverer` of these settings over AWS clients (AWS_ENDPOINT_URL aware); `clock`
    dates its attempts (tests move it on)."""
    # Every worker thread may hold a connection at once.
    pool = settings.delivery_concurrency + 4
    dynamodb = aws_client("dynamodb", max_pool_connections=pool)
    sqs = aws_client("sqs", max_pool_connections=pool)
    subscriptions = SubscriptionStore(
        settings.subscriptions_table, dynamodb, aws_client("kms", max_pool_connections=pool)
    )
    # One cache for the deliveries' reads and the endpoint-health writes: a failure's write
    # keeps the item it returns, every other write forgets it (`subscription_cache`).
    cache = SubscriptionCache(settings.subscription_cache_seconds)
    # endpoint.failing / recovered / disabled, delivery.exhausted (docs/notifications.md).
    health = build_health_observer(
        settings,
        CacheKeepingSubscriptions(subscriptions, cache),
        cache_seconds=settings.subscription_cache_seconds,
    )
    if isinstance(health.records, HealthRecords):
        health.records = CacheKeepingHealthRecords(health.records, cache)
    return Deliverer(
        attempt_log=AttemptLog(
            settings.deliveries_table, dynamodb, retention_days=settings.attempt_log_days
        ),
        subscriptions=subscriptions,
        client=make_webhook_client(
            allow_private_networks=settings.allow_private_webhooks,
            total_timeout=settings.delivery_timeout_seconds,
            # A batch POSTs to one receiver from every worker at once: keep what they opened.
            keep_alive_per_receiver=settings.delivery_concurrency,
        ),
        queue=DeliveryQueueMessages(sqs, settings.delivery_queue_url),
        dead_letters=DeliveryDlq(sqs, settings.delivery_dlq_url),
        schedule=settings.retry_schedule,
        concurrency=settings.delivery_concurrency,
        max_per_endpoint=settings.delivery_max_per_endpoint,
        max_per_tenant=settings.delivery_max_per_tenant,
        post_timeout_seconds=settings.delivery_timeout_seconds,
        subscription_cache=cache,
        metrics=metrics,
        clock=clock,
        first_attempts=FirstAttemptSuccesses(
            ClaimReader(settings.claims_table, dynamodb),
            FirstAttemptLog(
                settings.first_attempts_table, dynamodb, retention_days=settings.attempt_log_days
            ),
        ),
        observers=[health],
    )
