"""A tenant's webhook subscription, the input rules for it, and who wants which event.

Pure domain: no AWS client is imported here. The store (`store.py`) validates every input with
the functions below before it builds a `Subscription`, so invalid input fails with a stable code
(`exceptions.py`) instead of a generic pydantic error.

`Subscription` holds signing secrets only in encrypted form, and even those are excluded from
`model_dump()` and `repr()`: a dumped subscription is safe to list, log or return from the API.
"""

import unicodedata
from collections.abc import Iterable
from datetime import datetime, timedelta
from enum import StrEnum
from fnmatch import fnmatchcase
from secrets import token_urlsafe
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from jobhooks.delivery.exceptions import RefusedUrlError
from jobhooks.endpoint_health.model import HEALTHY, EndpointHealth
from jobhooks.subscriptions.exceptions import (
    InvalidDescriptionError,
    InvalidEventTypeError,
    InvalidGracePeriodError,
    InvalidJobNamePatternError,
    InvalidStatusError,
    InvalidTenantIdError,
    InvalidUrlError,
)

SUBSCRIPTION_ID_PREFIX: Final = "sub_"
# Every subscription id the bridge made (`new_subscription_id`: 22 characters after the prefix).
SUBSCRIPTION_ID_PATTERN: Final = r"^sub_[A-Za-z0-9_-]{1,64}$"
SECRET_ID_PREFIX: Final = "sec_"  # noqa: S105 - an id prefix, not a secret

MAX_TENANT_ID_LENGTH: Final = 256
MAX_DESCRIPTION_LENGTH: Final = 512
MAX_DISABLED_REASON_LENGTH: Final = 512
# A pattern is matched against an outcome's job_name, which is cut at 128 characters.
MAX_JOB_NAME_PATTERN_LENGTH: Final = 128
MAX_JOB_NAME_PATTERNS: Final = 20

DEFAULT_GRACE: Final = timedelta(hours=24)
MAX_GRACE: Final = timedelta(days=7)
# Svix keeps at most 10 previous secrets; past that the oldest ones stop signing early.
MAX_PREVIOUS_SECRETS: Final = 10


class EventType(StrEnum):
    """The event types a subscription can ask for: the routing keys of Fetcher's exchange
    (job outcomes), and the notifications jobhooks sends itself (docs/notifications.md)."""

    JOB_COMPLETED = "job.completed"
    JOB_FAILED = "job.failed"
    ENDPOINT_DISABLED = "endpoint.disabled"
    ENDPOINT_FAILING = "endpoint.failing"
    ENDPOINT_RECOVERED = "endpoint.recovered"
    DELIVERY_EXHAUSTED = "delivery.exhausted"
    JOB_HEALTH_DEGRADED = "job_health.degraded"
    JOB_HEALTH_RECOVERED = "job_health.recovered"


ALL_EVENT_TYPES: Final = tuple(EventType)
JOB_EVENT_TYPES: Final = (EventType.JOB_COMPLETED, EventType.JOB_FAILED)
NOTIFICATION_EVENT_TYPES: Final = tuple(t for t in EventType if t not in JOB_EVENT_TYPES)
# A subscription created without event types gets the job outcomes; notifications are asked for.
DEFAULT_EVENT_TYPES: Final = JOB_EVENT_TYPES


class SubscriptionStatus(StrEnum):
    ACTIVE = "active"
    DISABLED = "disabled"


class SecretVersion(BaseModel):
    """One signing secret of a subscription, AES-GCM encrypted under the subscription's data key.

    The current secret has no `expires_at`; a rotated-out one signs until `expires_at`.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    secret_id: str
    created_at: datetime
    expires_at: datetime | None = None
    ciphertext: bytes = Field(repr=False, exclude=True)

    def is_valid_at(self, now: datetime) -> bool:
        return self.expires_at is None or now < self.expires_at


class Subscription(BaseModel):
    """A tenant's webhook endpoint and the event types it wants.

    `data_key` (the KMS-encrypted data key) and the secrets' ciphertexts are excluded from dumps;
    `revision` is the optimistic-concurrency counter of the stored item.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    subscription_id: str
    tenant_id: str
    url: str
    event_types: tuple[EventType, ...]
    job_names: tuple[str, ...] = ()
    """Glob patterns (`billing-*`) an outcome's job_name must match; empty: every job."""
    status: SubscriptionStatus = SubscriptionStatus.ACTIVE
    description: str | None = None
    created_at: datetime
    updated_at: datetime
    disabled_reason: str | None = None
    secrets: tuple[SecretVersion, ...] = ()
    data_key: bytes = Field(repr=False, exclude=True)
    revision: int = Field(default=0, exclude=True)
    health: EndpointHealth = Field(default=HEALTHY, exclude=True)
    """Its endpoint's run of failed attempts (`jobhooks.endpoint_health`), read with it."""

    @property
    def is_active(self) -> bool:
        return self.status is SubscriptionStatus.ACTIVE

    def wants(self, tenant_id: str, event_type: str) -> bool:
        """True when an event of `tenant_id` and `event_type` must be delivered here."""
        return self.is_active and self.tenant_id == tenant_id and event_type in self.event_types

    def wants_job(self, job_name: str | None) -> bool:
        """True when the job filter admits `job_name` (None: the job's name is unmeasured,
        which only a subscription without a filter receives)."""
        if not self.job_names:
            return True
        return job_name is not None and any(
            fnmatchcase(job_name, pattern) for pattern in self.job_names
        )

    def valid_secrets(self, now: datetime) -> tuple[SecretVersion, ...]:
        """The secrets that still sign at `now`, newest first."""
        valid = (secret for secret in self.secrets if secret.is_valid_at(now))
        return tuple(sorted(valid, key=lambda secret: secret.created_at, reverse=True))


def new_subscription_id() -> str:
    return SUBSCRIPTION_ID_PREFIX + token_urlsafe(16)


def new_secret_id() -> str:
    return SECRET_ID_PREFIX + token_urlsafe(12)


def parse_event_types(event_types: Iterable[str]) -> tuple[EventType, ...]:
    """Known, de-duplicated event types in canonical order; at least one."""
    if isinstance(event_types, str):
        # A bare string would otherwise be split into characters.
        event_types = [event_types]
    requested = list(event_types)
    known = {event_type.value for event_type in EventType}
    unknown = sorted({str(value) for value in requested if value not in known})
    if unknown:
        raise InvalidEventTypeError(
            f"unknown event type(s) {', '.join(map(repr, unknown))}; "
            f"use one or more of {', '.join(sorted(known))}"
        )
    if not requested:
        raise InvalidEventTypeError(
            f"a subscription needs at least one event type; use one or more of "
            f"{', '.join(sorted(known))}"
        )
    return tuple(event_type for event_type in EventType if event_type.value in requested)


def parse_job_names(patterns: Iterable[str]) -> tuple[str, ...]:
    """De-duplicated glob patterns in the order given; empty strings are dropped, so `[""]`
    (the CLI's `--job-name ""`) means no filter."""
    if isinstance(patterns, str):
        patterns = [patterns]
    kept: list[str] = []
    for pattern in patterns:
        if not isinstance(pattern, str):
            raise InvalidJobNamePatternError("a job name pattern must be text")
        if pattern == "" or pattern in kept:
            continue
        if len(pattern) > MAX_JOB_NAME_PATTERN_LENGTH:
            raise InvalidJobNamePatternError(
                f"the job name pattern {pattern[:40]!r}... is longer than "
                f"{MAX_JOB_NAME_PATTERN_LENGTH} characters (job names are cut there)"
            )
        if any(unicodedata.category(char).startswith("C") for char in pattern):
            raise InvalidJobNamePatternError(
                f"the job name pattern {pattern!r} contains control characters"
            )
        kept.append(pattern)
    if len(kept) > MAX_JOB_NAME_PATTERNS:
        raise InvalidJobNamePatternError(
            f"a subscription takes at most {MAX_JOB_NAME_PATTERNS} job name patterns; "
            f"got {len(kept)} (a glob such as billing-* covers many names)"
        )
    return tuple(kept)


def validate_url(url: str, *, allow_http: bool = False) -> str:
    """`url` when the network policy admits its shape (`allow_http` for `jobhooks dev`); the
    policy checks its addresses where it is used: the API before storing it, and the deliver
    function before every attempt."""
    # Loaded with the first URL to check: ingest, which only matches subscriptions, never does.
    from jobhooks.delivery.network_policy import NetworkPolicy

    try:
        NetworkPolicy(allow_private_networks=allow_http).check_shape(url)
    except RefusedUrlError as refusal:
        raise InvalidUrlError(refusal.message) from None
    return url


def validate_tenant_id(tenant_id: str) -> str:
    if not isinstance(tenant_id, str) or not tenant_id:
        raise InvalidTenantIdError("a tenant id is required (the X-Tenant-ID Fetcher signs)")
    if len(tenant_id) > MAX_TENANT_ID_LENGTH:
        raise InvalidTenantIdError(
            f"the tenant id is longer than {MAX_TENANT_ID_LENGTH} characters"
        )
    if any(unicodedata.category(char).startswith("C") for char in tenant_id):
        raise InvalidTenantIdError("the tenant id contains control characters")
    return tenant_id


def validate_description(description: str | None) -> str | None:
    """`None` or an empty string means no description."""
    if description is None or description == "":
        return None
    if not isinstance(description, str):
        raise InvalidDescriptionError("the description must be text")
    if len(description) > MAX_DESCRIPTION_LENGTH:
        raise InvalidDescriptionError(
            f"the description is longer than {MAX_DESCRIPTION_LENGTH} characters; shorten it"
        )
    return description


def parse_status(status: str) -> SubscriptionStatus:
    try:
        return SubscriptionStatus(status)
    except ValueError:
        raise InvalidStatusError(
            f"unknown status {status!r}; use {SubscriptionStatus.ACTIVE.value!r} or "
            f"{SubscriptionStatus.DISABLED.value!r}"
        ) from None


def validate_grace(grace_seconds: float) -> timedelta:
    """The rotation grace period: from 0 (old secret stops at once) to 7 days."""
    if isinstance(grace_seconds, bool) or not isinstance(grace_seconds, int | float):
        raise InvalidGracePeriodError("the grace period must be a number of seconds")
    if not 0 <= grace_seconds <= MAX_GRACE.total_seconds():
        raise InvalidGracePeriodError(
            f"the grace period must be between 0 and {int(MAX_GRACE.total_seconds())} seconds "
            f"(7 days); got {grace_seconds}"
        )
    return timedelta(seconds=grace_seconds)


def bounded_reason(reason: str) -> str:
    """A disable reason fit for storage: it often quotes a receiver, so it is cut, not refused."""
    reason = " ".join(reason.split())
    if len(reason) > MAX_DISABLED_REASON_LENGTH:
        return reason[: MAX_DISABLED_REASON_LENGTH - 1] + "…"
    return reason
