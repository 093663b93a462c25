"""The ingest function's production wiring: settings in, the use case over AWS clients out.

`ingest_service()` is the process's `IngestService`, built from `IngestSettings` (the
environment) on first use and then reused; `build_ingest_service` builds one for given settings
(the management API builds its own for re-fan-outs and quarantine replays). The clients are made
on their first call (`jobhooks.storage.clients`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from typing import Any

from jobhooks.analytics.recorder import build_analytics_recorder
from jobhooks.inbound.keys import parse_key_list
from jobhooks.ingest.busy_records import BusyRecords
from jobhooks.ingest.claims import ClaimStore
from jobhooks.ingest.fan_out import DeliveryQueue
from jobhooks.ingest.fetcher_keys import (
    FetcherKeySource,
    SecretKeys,
    StaticKeys,
)
from jobhooks.ingest.quarantine import QuarantineStore
from jobhooks.ingest.service import IngestService
from jobhooks.ingest.settings import IngestSettings
from jobhooks.ingest.telemetry import IngestTelemetry
from jobhooks.storage.clients import SecretsManagerReader, aws_client
from jobhooks.storage.times import utc_now
from jobhooks.subscriptions.store import SubscriptionStore


def build_ingest_service(
    settings: IngestSettings,
    *,
    session: Any = None,
    telemetry: IngestTelemetry | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> IngestService:
    """The service over AWS clients (from `session`, or boto3's default session)."""
    dynamodb = aws_client("dynamodb", session=session)
    sqs = aws_client("sqs", session=session)
    keys: FetcherKeySource
    if settings.fetcher_keys_secret_arn:
        reader = SecretsManagerReader(session)
        keys = SecretKeys(settings.fetcher_keys_secret_arn, reader)
    else:
        keys = StaticKeys(parse_key_list(settings.fetcher_hmac_keys))
    return IngestService(
        claims=ClaimStore(
            settings.claims_table,
            dynamodb,
            retention_seconds=settings.claim_retention_seconds,
            clock=clock,
        ),
        quarantine=QuarantineStore(
            settings.quarantine_table,
            dynamodb,
            retention_seconds=settings.quarantine_retention_seconds,
            clock=clock,
        ),
        # Matching never decrypts a secret: the subscription stores need no KMS client.
        subscriptions=SubscriptionStore(
            settings.subscriptions_table,
            dynamodb,
            None,
            matching_cache_seconds=settings.subscription_cache_seconds,
        ),
        current_subscriptions=SubscriptionStore(settings.subscriptions_table, dynamodb, None),
        deliveries=DeliveryQueue(settings.delivery_queue_url, sqs),
        keys=keys,
        policy=settings.verification_policy(keys=()),
        producer_release=settings.producer_release,
        max_lease_ms=int(settings.claim_lease_max_seconds * 1000),
        telemetry=telemetry,
        clock=clock,
        busy_records=(
            BusyRecords(settings.ingest_queue_url, sqs, clock=clock)
            if settings.ingest_queue_url
            else None
        ),
        analytics=build_analytics_recorder(settings, session=session),
    )


@functools.cache
def ingest_service(telemetry: IngestTelemetry | None = None) -> IngestService:
    """The process's service, built from the environment on first use (then reused).

    Tests that change the environment or the boto3 default session call
    `ingest_service.cache_clear()`.
    """
    return build_ingest_service(IngestSettings.from_env(), telemetry=telemetry)
