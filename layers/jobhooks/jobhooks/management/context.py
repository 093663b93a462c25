"""What every management operation works on: the stores, the queues, the network policy, a clock.

One `ManagementContext` per process and configuration (`get_management_context`), over real
boto3 clients. Tests build their own with `build_management_context(...)` to inject a DNS
resolver, a clock, a webhook client or an SQS client, and hand it to the API through the Event
Handler's `dependency_overrides`; nothing is patched.

Each store, client and use case is made when a request first needs it, then kept: a request
that lists subscriptions never loads the attempt log, the quarantine or the HTTP client, and
the API's cold start pays for none of them (docs/performance.md). So is the network policy (its
address tables): only creating or changing a subscription checks a URL. The ingest use case
(re-fan-out, quarantine replay) is built from the ingest settings, so every other operation
keeps working when the API function lacks the Fetcher key configuration that replaying a
quarantined message needs.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from jobhooks.ingest.claim_retention import claim_retention_seconds
from jobhooks.management.exceptions import ManagementMisconfiguredError
from jobhooks.management.settings import (
    ManagementSettings,
    RedriveMethod,
    effective_redrive_method,
)
from jobhooks.settings import ConfigurationError
from jobhooks.storage.clients import aws_client
from jobhooks.storage.times import utc_now

if TYPE_CHECKING:
    from jobhooks.alerts.store import AlertRuleStore
    from jobhooks.delivery.attempt_log import AttemptLog
    from jobhooks.delivery.first_attempts import FirstAttemptLog
    from jobhooks.delivery.history import DeliveryHistory
    from jobhooks.delivery.network_policy import NetworkPolicy, Resolver
    from jobhooks.delivery.ports import WebhookPoster
    from jobhooks.delivery.recovery import Recovery
    from jobhooks.ingest.claims import ClaimStore
    from jobhooks.ingest.quarantine import QuarantineStore
    from jobhooks.ingest.service import IngestService
    from jobhooks.notifications.notifier import Notifier
    from jobhooks.subscriptions.store import SubscriptionStore

SECONDS_PER_DAY: Final = 86_400


def resolve_host(host: str) -> list[str]:
    """The system resolver (`network_policy.resolve_host`), loaded with the first URL checked."""
    from jobhooks.delivery import network_policy

    return network_policy.resolve_host(host)


@dataclass
class ManagementContext:
    """The stores, queues and clients of one configuration, each made when first used."""

    settings: ManagementSettings
    redrive_method: RedriveMethod
    clock: Callable[[], datetime] = utc_now
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ, repr=False)
    session: Any = field(default=None, repr=False)
    """The boto3 session clients come from; None: boto3's default session."""
    resolver: Resolver = field(default=resolve_host, repr=False)
    webhook_client_override: WebhookPoster | None = field(default=None, repr=False)
    sqs_override: Any = field(default=None, repr=False)

    @functools.cached_property
    def network_policy(self) -> NetworkPolicy:
        """The SSRF rules for a webhook URL: made when a subscription is first created or its
        URL changed; a request that reads never loads the address tables."""
        from jobhooks.delivery.network_policy import NetworkPolicy

        return NetworkPolicy(
            allow_private_networks=self.settings.allow_private_webhooks, resolver=self.resolver
        )

    @functools.cached_property
    def dynamodb(self) -> Any:
        return aws_client("dynamodb", session=self.session)

    @functools.cached_property
    def sqs(self) -> Any:
        if self.sqs_override is not None:
            return self.sqs_override
        return aws_client("sqs", session=self.session)

    @functools.cached_property
    def subscriptions(self) -> SubscriptionStore:
        from jobhooks.subscriptions.store import SubscriptionStore

        return SubscriptionStore(
            self.settings.subscriptions_table,
            self.dynamodb,
            aws_client("kms", session=self.session),
            kms_key_id=self.settings.kms_key_id or None,
            allow_http_urls=self.settings.allow_private_webhooks,
            max_per_tenant=self.settings.max_subscriptions_per_tenant,
            clock=self.clock,
        )

    @functools.cached_property
    def notifier(self) -> Notifier:
        """Notifications the API sends itself (`endpoint.disabled` by an operator)."""
        from jobhooks.notifications.settings import NotificationSettings
        from jobhooks.notifications.wiring import build_notifier

        settings = NotificationSettings(
            subscriptions_table=self.settings.subscriptions_table,
            delivery_queue_url=self.settings.delivery_queue_url,
            operations_topic_arn=self.settings.operations_topic_arn,
        )
        return build_notifier(settings, session=self.session, clock=self.clock)

    @functools.cached_property
    def alert_rules(self) -> AlertRuleStore:
        if not self.settings.alert_rules_table:
            raise ManagementMisconfiguredError(
                "JOBHOOKS_ALERT_RULES_TABLE: the alert rules table is needed for /v1/alerts "
                "(template.yaml's AlertRulesTable)"
            )
        from jobhooks.alerts.store import AlertRuleStore

        return AlertRuleStore(self.settings.alert_rules_table, self.dynamodb, clock=self.clock)

    @functools.cached_property
    def attempt_log(self) -> AttemptLog:
        from jobhooks.delivery.attempt_log import AttemptLog

        return AttemptLog(self.settings.deliveries_table, self.dynamodb, clock=self.clock)

    @functools.cached_property
    def first_attempts(self) -> FirstAttemptLog:
        from jobhooks.delivery.first_attempts import FirstAttemptLog

        return FirstAttemptLog(self.settings.first_attempts_table, self.dynamodb, clock=self.clock)

    @functools.cached_property
    def delivery_history(self) -> DeliveryHistory:
        """Every read of deliveries: first-attempt pages and the attempt log as one."""
        from jobhooks.delivery.history import DeliveryHistory
        from jobhooks.storage.claim_reader import ClaimReader

        claims = ClaimReader(self.settings.claims_table, self.dynamodb, clock=self.clock)
        return DeliveryHistory(self.attempt_log, self.first_attempts, claims)

    @functools.cached_property
    def recovery(self) -> Recovery:
        """Sends a subscription's undelivered deliveries again (`recover`)."""
        from jobhooks.delivery.recovery import Recovery
        from jobhooks.delivery_queue import DeliveryQueue
        from jobhooks.storage.claim_reader import ClaimReader

        return Recovery(
            attempt_log=self.attempt_log,
            claims=ClaimReader(self.settings.claims_table, self.dynamodb, clock=self.clock),
            queue=DeliveryQueue(self.settings.delivery_queue_url, self.sqs),
        )

    @functools.cached_property
    def claims(self) -> ClaimStore:
        from jobhooks.ingest.claims import ClaimStore

        settings = self.settings
        return ClaimStore(
            settings.claims_table,
            self.dynamodb,
            retention_seconds=claim_retention_seconds(
                freshness_window_seconds=int(settings.dedup_retention_days * SECONDS_PER_DAY),
                queue_retention_seconds=settings.ingest_queue_retention_seconds,
                delivery_retention_seconds=settings.attempt_log_days * SECONDS_PER_DAY,
            ),
            clock=self.clock,
        )

    @functools.cached_property
    def quarantine(self) -> QuarantineStore:
        from jobhooks.ingest.quarantine import QuarantineStore

        return QuarantineStore(
            self.settings.quarantine_table,
            self.dynamodb,
            retention_seconds=int(self.settings.quarantine_retention_days * SECONDS_PER_DAY),
            clock=self.clock,
        )

    @functools.cached_property
    def webhook_client(self) -> WebhookPoster:
        """The client test sends go through, under this context's network policy rules."""
        if self.webhook_client_override is not None:
            return self.webhook_client_override
        from jobhooks.delivery.http_client import make_webhook_client

        return make_webhook_client(
            allow_private_networks=self.settings.allow_private_webhooks,
            total_timeout=self.settings.test_send_timeout_seconds,
            resolver=self.resolver,
        )

    @functools.cached_property
    def ingest(self) -> IngestService:
        """The ingest use case; raises `ManagementMisconfiguredError` when its settings are
        incomplete."""
        from jobhooks.ingest.settings import IngestSettings
        from jobhooks.ingest.wiring import build_ingest_service

        try:
            ingest_settings = IngestSettings.from_env(self.environ)
        except ConfigurationError as error:
            raise ManagementMisconfiguredError(error.message) from None
        return build_ingest_service(ingest_settings, session=self.session, clock=self.clock)


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
    return ManagementContext(
        settings=settings,
        redrive_method=effective_redrive_method(settings.dlq_redrive, environ),
        clock=clock,
        environ=environ,
        session=session,
        resolver=resolver,
        webhook_client_override=webhook_client,
        sqs_override=sqs,
    )


@functools.lru_cache(maxsize=4)
def get_management_context(settings: ManagementSettings) -> ManagementContext:
    """One context per process and configuration (the settings are read per request, cheaply,
    so `jobhooks dev` and tests that re-provision the stack get a fresh one)."""
    return build_management_context(settings)


def management_context() -> ManagementContext:
    """The context of this process's configuration: the dependency the /v1 routes and the
    portal's routes both declare (tests replace it through the resolver's
    `dependency_overrides`)."""
    try:
        settings = ManagementSettings.from_env()
    except ConfigurationError as error:
        raise ManagementMisconfiguredError(error.message) from None
    return get_management_context(settings)
