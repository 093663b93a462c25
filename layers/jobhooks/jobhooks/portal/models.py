"""Request and response shapes of the portal's routes and of the operator routes that manage
access (grants, portal links, revocations); the OpenAPI document is generated from them.

The portal's own API reuses the management answers (`SubscriptionView`, `DeliveryPage`, ...):
one shape per resource, whoever asks.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field, model_validator

from jobhooks.delivery.network_policy import MAX_URL_LENGTH
from jobhooks.management.models import ErrorDetail, JobNamePatterns, Timestamp
from jobhooks.portal.grants import (
    MAX_DESCRIPTION_LENGTH,
    MAX_PATTERN_LENGTH,
    MAX_TENANT_ID_LENGTH,
    MAX_TENANTS_PER_GRANT,
)
from jobhooks.portal.sessions import (
    DEFAULT_LINK_TTL,
    MAX_LINK_TTL,
    MIN_LINK_TTL,
    SESSION_ID_PATTERN,
)
from jobhooks.subscriptions.model import (
    DEFAULT_EVENT_TYPES,
    EventType,
)
from jobhooks.subscriptions.model import (
    MAX_DESCRIPTION_LENGTH as MAX_SUBSCRIPTION_DESCRIPTION,
)

PORTAL_HEADER: Final = "X-Jobhooks-Portal"


class _Model(BaseModel):
    # Built on first use, not at import, like the management API's models: the API function's
    # cold start need not build validators the request at hand never uses.
    model_config = ConfigDict(defer_build=True)


class _Request(_Model):
    model_config = ConfigDict(extra="forbid", defer_build=True)


# -- portal links and revocation (operators) --------------------------------------------------


class PortalLinkRequest(_Request):
    tenant_id: str = Field(
        min_length=1, max_length=MAX_TENANT_ID_LENGTH, description="the tenant the link opens"
    )
    ttl_seconds: int = Field(
        default=int(DEFAULT_LINK_TTL.total_seconds()),
        ge=int(MIN_LINK_TTL.total_seconds()),
        le=int(MAX_LINK_TTL.total_seconds()),
        description="how long the link may be opened (default 15 minutes, at most 24 hours); "
        "it opens the portal once",
    )


class PortalLink(_Model):
    url: str = Field(
        description="the one-time link; its token is in the fragment (#t=...), which browsers "
        "never send to a server"
    )
    expires_at: Timestamp
    tenant_id: str
    link_id: str


class RevocationRequest(_Request):
    """Exactly one of `tenant_id` (every link and session of the tenant) and `session_id`."""

    tenant_id: str | None = Field(default=None, min_length=1, max_length=MAX_TENANT_ID_LENGTH)
    session_id: str | None = Field(default=None, pattern=SESSION_ID_PATTERN)

    @model_validator(mode="after")
    def _exactly_one(self) -> RevocationRequest:
        if (self.tenant_id is None) == (self.session_id is None):
            raise ValueError("give exactly one of tenant_id and session_id")
        return self


class Revocation(_Model):
    tenant_id: str | None = None
    session_id: str | None = None
    epoch: int | None = Field(
        default=None, description="the tenant's new revocation epoch (tenant revocations)"
    )
    revoked: bool = True


# -- grants (operators) ------------------------------------------------------------------------


class GrantRequest(_Request):
    principal_pattern: str = Field(
        min_length=1,
        max_length=MAX_PATTERN_LENGTH,
        description="IAM principal ARN pattern (`*`, `?` as in IAM), matched against the "
        "caller's ARN; roles: arn:aws:sts::ACCOUNT:assumed-role/ROLE/*",
    )
    tenants: list[str] = Field(
        min_length=1, max_length=MAX_TENANTS_PER_GRANT, description="the tenants it may act for"
    )
    description: str = Field(default="", max_length=MAX_DESCRIPTION_LENGTH)


class GrantView(_Model):
    grant_id: str
    principal_pattern: str
    tenants: list[str]
    description: str = ""
    created_at: Timestamp
    created_by: str = Field(description="the operator's ARN that added it")


class GrantList(_Model):
    grants: list[GrantView]


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
