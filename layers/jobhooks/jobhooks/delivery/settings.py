"""The deliver function's configuration (docs/architecture.md, "Environment")."""

from typing import Any

from pydantic import ConfigDict, Field, field_validator

from jobhooks.delivery.model import MAX_TOTAL_TIMEOUT_SECONDS
from jobhooks.delivery.retry_schedule import (
    DEFAULT_SCHEDULE,
    InvalidRetryScheduleError,
    RetrySchedule,
)
from jobhooks.endpoint_health.settings import EndpointHealthSettings
from jobhooks.settings import Settings


class WebhookPostSettings(Settings):
    """How webhooks are POSTed, retried and recorded: the deliver function's settings that
    ingest shares for the first attempts it makes (`jobhooks.delivery.first_attempt`)."""

    model_config = ConfigDict(frozen=True, extra="ignore", arbitrary_types_allowed=True)

    retry_schedule: RetrySchedule = DEFAULT_SCHEDULE
    attempt_log_days: int = Field(30, ge=1, le=365)
    delivery_concurrency: int = Field(10, ge=1, le=100)
    # Bounded by the HTTP client's own 15 s ceiling; lower only to shed slow receivers sooner
    # (tests and `jobhooks dev` use a second or two).
    delivery_timeout_seconds: float = Field(MAX_TOTAL_TIMEOUT_SECONDS, gt=0, le=15)
    allow_private_webhooks: bool = False

    @field_validator("retry_schedule", mode="before")
    @classmethod
    def _parse_schedule(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return RetrySchedule.parse(value)
            except InvalidRetryScheduleError as error:
                raise ValueError(str(error)) from None
        return value


class DeliverSettings(WebhookPostSettings, EndpointHealthSettings):
    """Read once at cold start: `DeliverSettings.from_env()` names any bad `JOBHOOKS_*` variable.

    With the endpoint-health rules' settings (`EndpointHealthSettings`: thresholds, and where
    notifications go), since the deliver function settles attempts."""

    deliveries_table: str = Field(min_length=1)
    subscriptions_table: str = Field(min_length=1)
    # Read by the duplicate check: a delivery whose first attempt (ingest's) succeeded has no
    # record, only an entry in the page its event's claim names (`delivery.history`).
    claims_table: str = Field(min_length=1)
    first_attempts_table: str = Field(min_length=1)
    delivery_queue_url: str = Field(min_length=1)
    delivery_dlq_url: str = Field(min_length=1)
    # How long a warm function reuses a subscription it read: saves one read per delivery. A
    # disable or a secret rotation made elsewhere is seen this much later (0 turns it off).
    subscription_cache_seconds: float = Field(30, ge=0, le=300)
    # At most this many POSTs at once to one endpoint, and to one tenant's endpoints, of the
    # function's `delivery_concurrency`: a tenant's slow endpoints never hold every worker; a
    # record over its cap waits for its own tenant's POSTs, holding no worker.
    delivery_max_per_endpoint: int = Field(4, ge=1, le=100)
    delivery_max_per_tenant: int = Field(5, ge=1, le=100)
