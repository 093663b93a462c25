"""Request and response shapes of the portal's own API; the OpenAPI document is generated
from them.

The portal's API reuses the management answers (`SubscriptionView`, `DeliveryPage`, ...): one
shape per resource, whoever asks.
"""

from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from jobhooks.delivery.limits import MAX_URL_LENGTH
from jobhooks.management.models import ErrorDetail, JobNamePatterns, Timestamp
from jobhooks.subscriptions.model import (
    DEFAULT_EVENT_TYPES,
    EventType,
)
from jobhooks.subscriptions.model import (
    MAX_DESCRIPTION_LENGTH as MAX_SUBSCRIPTION_DESCRIPTION,
)

PORTAL_HEADER: Final = "X-Jobhooks-Portal"


class _Model(BaseModel):
    # Built on first use, not at import, like the management API's models: the portal function's
    # cold start need not build validators the request at hand never uses.
    model_config = ConfigDict(defer_build=True)


class _Request(_Model):
    model_config = ConfigDict(extra="forbid", defer_build=True)


# -- the portal's own API ----------------------------------------------------------------------


class PortalRefusal(_Model):
    """A portal request refused: by API Gateway (`message`, when the authorizer denied) or by
    the function (`error`)."""

    message: str | None = Field(default=None, description="API Gateway's own answer: Forbidden")
    error: ErrorDetail | None = None


class PortalSessionView(_Model):
    tenant_id: str
    session_id: str
    expires_at: Timestamp


class PortalSubscriptionRequest(_Request):
    """A new endpoint of the session's tenant (the tenant comes from the session, never here)."""

    url: str = Field(min_length=1, max_length=MAX_URL_LENGTH)
    event_types: list[EventType] = Field(
        default_factory=lambda: list(DEFAULT_EVENT_TYPES), min_length=1
    )
    job_names: JobNamePatterns = Field(default_factory=list)
    description: str | None = Field(default=None, max_length=MAX_SUBSCRIPTION_DESCRIPTION)


class JobHealthPoint(_Model):
    """One job_name on one UTC day (the reviewed question job_health_over_time)."""

    day: str = Field(description="the UTC day, yyyy-MM-dd")
    job_name: str
    outcomes: int
    failures: int
    failure_rate: float = Field(description="failures / outcomes on that day")
    p95_duration_ms: int | None = Field(
        default=None, description="nearest-rank p95 of the day's measured durations; null if none"
    )


class JobHealthReport(_Model):
    configured: bool = Field(description="false: this stack keeps no analytics table")
    window_from: Timestamp | None = None
    window_to: Timestamp | None = None
    points: list[JobHealthPoint] = Field(default_factory=list)
    pending: bool = Field(
        default=False, description="the query engine is still answering; ask again shortly"
    )
    note: str | None = None
