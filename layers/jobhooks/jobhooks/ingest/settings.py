"""The ingest function's configuration: one model, read once from `JOBHOOKS_*` at start.

`VerificationSettings` (how inbound events are verified) is the part `jobhooks inspect` shares.

docs/architecture.md ("Environment") lists every variable; docs/ingest.md says what each one
changes; the analytics sink's (`AnalyticsSinkSettings`) are in docs/analytics.md.
"""

from pydantic import Field, ValidationInfo, field_validator

from jobhooks.analytics.settings import AnalyticsSinkSettings
from jobhooks.delivery.post_settings import WebhookPostSettings
from jobhooks.endpoint_health.settings import EndpointHealthSettings
from jobhooks.inbound.cross_checks import parse_source_list
from jobhooks.inbound.job_events import VerificationPolicy
from jobhooks.inbound.keys import HmacKey, KeyConfigurationError, parse_key_list
from jobhooks.ingest.claim_retention import claim_retention_seconds
from jobhooks.settings import Settings

SECONDS_PER_DAY = 86_400


class VerificationSettings(Settings):
    """How inbound Fetcher events are verified (ingest, `jobhooks inspect`)."""

    fetcher_hmac_keys: str = Field(
        "", description="external HMAC keys, 64 hex each, comma-separated, current first"
    )
    dedup_retention_days: float = Field(7, gt=0, le=365)
    future_skew_seconds: float = Field(30, ge=0, le=3600)
    allow_legacy_signatures: bool = False
    producer_release: str = ""
    allowed_sources: str = Field(
        "",
        description="ce-source values accepted, comma-separated; empty: ce-source is not checked",
    )

    @field_validator("fetcher_hmac_keys")
    @classmethod
    def _keys_parse(cls, value: str) -> str:
        if value:
            try:
                parse_key_list(value)
            except KeyConfigurationError as error:
                raise ValueError(str(error)) from None
        return value

    @field_validator("allowed_sources")
    @classmethod
    def _sources_parse(cls, value: str) -> str:
        parse_source_list(value)
        return value

    def verification_policy(self, keys: tuple[HmacKey, ...] | None = None) -> VerificationPolicy:
        """The policy for verifying events; `keys` overrides the directly configured ones."""
        if keys is None:
            keys = parse_key_list(self.fetcher_hmac_keys)
        retention = self.dedup_retention_days * 86400
        return VerificationPolicy(
            keys=keys,
            max_age_seconds=retention,
            max_future_seconds=self.future_skew_seconds,
            allow_legacy_signatures=self.allow_legacy_signatures,
            allowed_sources=parse_source_list(self.allowed_sources),
            max_emission_lag_seconds=retention,
        )


class IngestSettings(
    VerificationSettings, AnalyticsSinkSettings, WebhookPostSettings, EndpointHealthSettings
):
    """The ingest function's settings; with `WebhookPostSettings`, how its first attempts POST
    (the deliver function's timeout, network policy, concurrency, retry schedule)."""

    claims_table: str = Field(min_length=1)
    subscriptions_table: str = Field(min_length=1)
    quarantine_table: str = Field(min_length=1)
    delivery_queue_url: str = Field(min_length=1)
    # The queue this function consumes; when set, a record whose claim is busy comes back when
    # the claim's lease ends instead of after the visibility timeout (ingest/busy_records.py).
    ingest_queue_url: str = ""
    fetcher_keys_secret_arn: str = Field(
        "",
        validate_default=True,
        description="Secrets Manager secret holding the keys; wins over fetcher_hmac_keys",
    )
    # The lease is the invocation's remaining time, bounded by this. Below the ingest queue's
    # visibility timeout (240 s), a dead owner's claim is free before SQS shows the record again;
    # it also bounds a replay from the management API, which has no invocation deadline of ours.
    claim_lease_max_seconds: float = Field(120, gt=0, le=900)
    # template.yaml's IngestQueue MessageRetentionPeriod (4 days, SQS's range is 60 s-14 days):
    # a copy can wait this long after its receipt, so claims outlive it (ingest/claim_retention).
    ingest_queue_retention_seconds: int = Field(4 * SECONDS_PER_DAY, ge=60, le=14 * SECONDS_PER_DAY)
    subscription_cache_seconds: float = Field(30, ge=0, le=3600)
    quarantine_retention_days: float = Field(30, gt=0, le=365)
    # The first attempts (delivery/first_attempt.py): their successes' pages, the records of the
    # others, the delivery DLQ a one-attempt schedule parks in. Required when the function makes
    # first attempts (ingest/wiring.py says which is missing); the management API's in-process
    # ingest makes none.
    first_attempts_table: str = ""
    deliveries_table: str = ""
    delivery_dlq_url: str = ""
    # How long the first attempts of one invocation may take (FirstAttemptSeconds): the longer,
    # the more slow receivers answer in ingest; the shorter, the less an invocation waits.
    # 0 turns them off: every delivery goes through the delivery queue, as the management API's
    # in-process ingest does (a deployed stack always makes them: the parameter is 1 to 30).
    first_attempt_seconds: float = Field(5, ge=0, le=30)
    # An invocation's first attempts all at once: 10 events to 2 subscriptions are 20 POSTs,
    # and each wave of them is one receiver's answer time more of the function's duration.
    first_attempt_concurrency: int = Field(32, ge=1, le=100)
    # An answer slower than this (a 2xx included) opens the endpoint's circuit for a minute: its
    # deliveries then go through the deliver function, not through everyone's invocation.
    first_attempt_latency_budget_seconds: float = Field(1.0, gt=0, le=30)
    # Where the analytics rows and first-attempt pages that could not be written go, for the
    # spill function to write (jobhooks/spill): their events complete instead of retrying, which
    # would POST their webhooks again. Empty: such an event is retried.
    spill_queue_url: str = ""

    @field_validator("fetcher_keys_secret_arn")
    @classmethod
    def _keys_configured(cls, value: str, info: ValidationInfo) -> str:
        # An invalid key list is reported on its own variable (it is then absent from `data`).
        if not value and info.data.get("fetcher_hmac_keys") == "":
            raise ValueError(
                "no Fetcher HMAC key source: set JOBHOOKS_FETCHER_KEYS_SECRET_ARN (deployed) or "
                "JOBHOOKS_FETCHER_HMAC_KEYS (local use)"
            )
        return value

    @property
    def dedup_retention_seconds(self) -> int:
        return int(self.dedup_retention_days * SECONDS_PER_DAY)

    @property
    def claim_retention_seconds(self) -> int:
        # At least as long as the deliveries: a first-attempt success is found through its
        # claim's batch, so the claim must outlive the page (AttemptLogDays).
        return claim_retention_seconds(
            freshness_window_seconds=self.dedup_retention_seconds,
            queue_retention_seconds=self.ingest_queue_retention_seconds,
            delivery_retention_seconds=int(self.attempt_log_days * SECONDS_PER_DAY),
        )

    @property
    def quarantine_retention_seconds(self) -> int:
        return int(self.quarantine_retention_days * SECONDS_PER_DAY)
