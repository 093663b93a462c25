"""What every management operation works on: the stores, the queues, the network policy, a clock.

One `ManagementContext` per process and configuration (`get_management_context`), over real
boto3 clients. Tests build their own with `build_management_context(...)` to inject a DNS
resolver, a clock or a webhook client, and hand it to the API through the Event Handler's
`dependency_overrides`; nothing is patched.

The ingest use case (re-fan-out, quarantine replay) is built on first use from the ingest
settings, so every other operation keeps working when the API function lacks the Fetcher key
configuration that replaying a quarantined message needs.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from jobhooks.delivery.attempt_log import AttemptLog
from jobhooks.delivery.http_client import make_webhook_client
from jobhooks.delivery.network_policy import NetworkPolicy, Resolver, resolve_host
from jobhooks.delivery.ports import WebhookPoster
from jobhooks.ingest.claim_retention import claim_retention_seconds
from jobhooks.ingest.claims import ClaimStore
from jobhooks.ingest.quarantine import QuarantineStore
from jobhooks.ingest.service import IngestService
from jobhooks.ingest.settings import SECONDS_PER_DAY, IngestSettings
from jobhooks.ingest.wiring import build_ingest_service
from jobhooks.management.exceptions import ManagementMisconfiguredError
from jobhooks.management.settings import (
    ManagementSettings,
    RedriveMethod,
    effective_redrive_method,
)
from jobhooks.settings import ConfigurationError
from jobhooks.storage.clients import aws_client
from jobhooks.storage.times import utc_now
from jobhooks.subscriptions.store import SubscriptionStore


@dataclass
class ManagementContext:
    settings: ManagementSettings
    subscriptions: SubscriptionStore
    attempt_log: AttemptLog
    claims: ClaimStore
    quarantine: QuarantineStore
    sqs: Any
    network_policy: NetworkPolicy
    webhook_client: WebhookPoster
    redrive_method: RedriveMethod
    clock: Callable[[], datetime] = utc_now
    ingest_factory: Callable[[], IngestService] | None = field(default=None, repr=False)

    @functools.cached_property
    def ingest(self) -> IngestService:
        """The ingest use case; raises `ManagementMisconfiguredError` when its settings are
        incomplete."""
        if self.ingest_factory is None:
            raise RuntimeError("this context was built without an ingest service")
        return self.ingest_factory()


def build_management_context(
    settings: ManagementSettings,
    *,
    environ: Mapping[str, str] | None = None,
    session: Any = None,
    resolver: Resolver = resolve_host,
    clock: Callable[[], datetime] = utc_now,
    webhook_client: WebhookPoster | None = None,
    sqs: Any = None,
) -> ManagementContext:
    """The context over AWS clients from `session` (default: boto3's default session)."""
    environ = os.environ if environ is None else environ
    dynamodb = aws_client("dynamodb", session=session)
    policy = NetworkPolicy(
        allow_private_networks=settings.allow_private_webhooks, resolver=resolver
    )
    if webhook_client is None:
        webhook_client = make_webhook_client(
            allow_private_networks=settings.allow_private_webhooks,
            total_timeout=settings.test_send_timeout_seconds,
            resolver=resolver,
        )

    def ingest() -> IngestService:
        try:
            settings = IngestSettings.from_env(environ)
        except ConfigurationError as error:
            raise ManagementMisconfiguredError(error.message) from None
        return build_ingest_service(settings, session=session, clock=clock)

    return ManagementContext(
        settings=settings,
        subscriptions=SubscriptionStore(
            settings.subscriptions_table,
            dynamodb,
            aws_client("kms", session=session),
            kms_key_id=settings.kms_key_id or None,
            allow_http_urls=settings.allow_private_webhooks,
            clock=clock,
        ),
        attempt_log=AttemptLog(settings.deliveries_table, dynamodb, clock=clock),
        claims=ClaimStore(
            settings.claims_table,
            dynamodb,
            retention_seconds=claim_retention_seconds(
                freshness_window_seconds=int(settings.dedup_retention_days * SECONDS_PER_DAY),
                queue_retention_seconds=settings.ingest_queue_retention_seconds,
            ),
            clock=clock,
        ),
        quarantine=QuarantineStore(
            settings.quarantine_table,
            dynamodb,
            retention_seconds=int(settings.quarantine_retention_days * SECONDS_PER_DAY),
            clock=clock,
        ),
        sqs=sqs if sqs is not None else aws_client("sqs", session=session),
        network_policy=policy,
        webhook_client=webhook_client,
        redrive_method=effective_redrive_method(settings.dlq_redrive, environ),
        clock=clock,
        ingest_factory=ingest,
    )


@functools.lru_cache(maxsize=4)
def get_management_context(settings: ManagementSettings) -> ManagementContext:
    """One context per process and configuration (the settings are read per request, cheaply,
    so `jobhooks dev` and tests that re-provision the stack get a fresh one)."""
    return build_management_context(settings)
