"""The ingest function's production wiring: settings in, the use case over AWS clients out.

`ingest_service()` is the process's `IngestService`, built from `IngestSettings` (the
environment) on first use and then reused, with first attempts on; `build_ingest_service` builds
one for given settings (the management API builds its own for re-fan-outs and quarantine
replays, without first attempts). The clients are made
on their first call (`jobhooks.storage.clients`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from jobhooks.analytics.recorder import build_analytics_recorder
from jobhooks.delivery_queue import DeliveryQueue
from jobhooks.exceptions import ConfigurationError
from jobhooks.inbound.keys import parse_key_list
from jobhooks.ingest.busy_records import BusyRecords
from jobhooks.ingest.claims import ClaimStore
from jobhooks.ingest.fetcher_keys import (
    FetcherKeySource,
    SecretKeys,
    StaticKeys,
)
from jobhooks.ingest.quarantine import QuarantineStore
from jobhooks.ingest.service import IngestService
from jobhooks.ingest.settings import IngestSettings
from jobhooks.ingest.telemetry import IngestTelemetry
from jobhooks.spill.queue import SpillQueue
from jobhooks.storage.clients import SecretsManagerReader, aws_client
from jobhooks.storage.times import utc_now
from jobhooks.subscriptions.store import SubscriptionStore

if TYPE_CHECKING:
    from jobhooks.delivery.first_attempt import FirstAttemptStage
    from jobhooks.ingest.ports import FirstAttempts


def build_ingest_service(
    settings: IngestSettings,
    *,
    session: Any = None,
    telemetry: IngestTelemetry | None = None,
    clock: Callable[[], datetime] = utc_now,
    first_attempts: bool = False,
    spill: bool = False,
) -> IngestService:
    """The service over AWS clients (from `session`, or boto3's default session).

    `first_attempts`: ingest POSTs every delivery once itself (the ingest function), unless
    `first_attempt_seconds` is 0; without, every task goes to the delivery queue (the management
    API's re-fan-outs and replays). `spill`: rows and pages that cannot be written go to
    `spill_queue_url` (the ingest function, when it is set); without, their events retry (the
    management API, which has no first attempts to repeat and no grant on the spill queue).
    """
    dynamodb = aws_client("dynamodb", session=session)
    sqs = aws_client("sqs", session=session)
    first_attempts = first_attempts and settings.first_attempt_seconds > 0
    # With first attempts the matching store also opens signing secrets (KMS, the deliver
    # function's data-key cache) and disables a subscription that answered 410, which clears
    # its matching cache: the next batch sees it disabled. Matching alone needs no KMS. Disabled
    # subscriptions match too: their deliveries are recorded `skipped` (delivery.skipped).
    matching = SubscriptionStore(
        settings.subscriptions_table,
        dynamodb,
        aws_client("kms", session=session) if first_attempts else None,
        matching_cache_seconds=settings.subscription_cache_seconds,
        match_disabled=True,
    )
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
        subscriptions=matching,
        current_subscriptions=SubscriptionStore(
            settings.subscriptions_table, dynamodb, None, match_disabled=True
        ),
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
        first_attempts=(
            _first_attempts_when_needed(settings, matching, session=session, clock=clock)
            if first_attempts
            else None
        ),
        spill=(
            SpillQueue(settings.spill_queue_url, sqs)
            if spill and settings.spill_queue_url
            else None
        ),
    )


def _first_attempts_when_needed(
    settings: IngestSettings,
    subscriptions: SubscriptionStore,
    *,
    session: Any = None,
    clock: Callable[[], datetime] = utc_now,
) -> Callable[[], FirstAttempts]:
    """Checks the settings now (a missing variable fails the cold start, naming it) and builds
    the stage when the first batch needs it: its HTTP client, urllib3 and the delivery modules
    are about a third of the function's import time (docs/performance.md)."""
    _check_first_attempt_settings(settings)
    # Every first attempt opens its subscription's signing secrets with AES-GCM, which
    # `subscriptions.secrets` imports on first use (for the management API, which seldom opens
    # one): with first attempts on, a batch with a subscriber needs it, so the cold start loads
    # it (cryptography's Rust core) rather than the first batch.
    import cryptography.hazmat.primitives.ciphers.aead  # noqa: F401

    return functools.cache(
        functools.partial(
            build_first_attempts, settings, subscriptions, session=session, clock=clock
        )
    )


def _check_first_attempt_settings(settings: IngestSettings) -> None:
    missing = [
        f"JOBHOOKS_{name.upper()}"
        for name in ("first_attempts_table", "deliveries_table", "delivery_dlq_url")
        if not getattr(settings, name)
    ]
    if missing:
        raise ConfigurationError(
            f"{', '.join(missing)}: required when ingest makes the first attempts (set it as "
            "template.yaml does)"
        )


def build_first_attempts(
    settings: IngestSettings,
    subscriptions: SubscriptionStore,
    *,
    session: Any = None,
    clock: Callable[[], datetime] = utc_now,
) -> FirstAttemptStage:
    """The delivery package's first-attempt stage for these settings: the deliver function's
    HTTP client settings, retry schedule and settle step, over the stores it writes to. Raises
    `ConfigurationError` naming a missing variable."""
    from jobhooks.delivery.attempt_log import AttemptLog
    from jobhooks.delivery.circuit_breaker import CircuitBreaker
    from jobhooks.delivery.first_attempt import FirstAttemptDispatcher, FirstAttemptStage
    from jobhooks.delivery.first_attempts import FirstAttemptLog
    from jobhooks.delivery.http_client import make_webhook_client
    from jobhooks.delivery.queues import DeliveryDlq
    from jobhooks.delivery.settle import Settlement
    from jobhooks.endpoint_health.wiring import build_health_observer

    _check_first_attempt_settings(settings)
    # Every POST thread may decrypt a data key or write at once.
    pool = settings.first_attempt_concurrency + 4
    dynamodb = aws_client("dynamodb", session=session, max_pool_connections=pool)
    return FirstAttemptStage(
        dispatcher=FirstAttemptDispatcher(
            subscriptions=subscriptions,
            client=make_webhook_client(
                allow_private_networks=settings.allow_private_webhooks,
                total_timeout=settings.delivery_timeout_seconds,
                # A batch POSTs to one receiver from every worker at once: keep what they opened.
                keep_alive_per_receiver=settings.first_attempt_concurrency,
            ),
            breaker=CircuitBreaker(),
            phase_seconds=settings.first_attempt_seconds,
            latency_budget_seconds=settings.first_attempt_latency_budget_seconds,
            post_timeout_seconds=settings.delivery_timeout_seconds,
            concurrency=settings.first_attempt_concurrency,
            clock=clock,
        ),
        settlement=Settlement(
            attempt_log=AttemptLog(
                settings.deliveries_table,
                dynamodb,
                retention_days=settings.attempt_log_days,
                clock=clock,
            ),
            # Disables a subscription whose receiver answered 410, which clears its matching
            # cache: the next batch no longer matches it.
            subscriptions=subscriptions,
            dead_letters=DeliveryDlq(aws_client("sqs", session=session), settings.delivery_dlq_url),
            schedule=settings.retry_schedule,
            # endpoint.failing / recovered / disabled, delivery.exhausted, as deliver's.
            observers=[
                build_health_observer(
                    settings,
                    subscriptions,
                    cache_seconds=settings.subscription_cache_seconds,
                    session=session,
                )
            ],
        ),
        pages=FirstAttemptLog(
            settings.first_attempts_table,
            dynamodb,
            retention_days=settings.attempt_log_days,
            clock=clock,
        ),
    )


@functools.cache
def ingest_service(telemetry: IngestTelemetry | None = None) -> IngestService:
    """The process's service, built from the environment on first use (then reused).

    Tests that change the environment or the boto3 default session call
    `ingest_service.cache_clear()`.
    """
    return build_ingest_service(
        IngestSettings.from_env(), telemetry=telemetry, first_attempts=True, spill=True
    )
