"""Request and response shapes of the management API.

The OpenAPI document (docs/openapi.json) is generated from these models, and the Event Handler
validates every request against them before an operation runs, so their constraints are the
API's documented input rules. Times are RFC 3339 UTC strings with milliseconds and `Z`.

No response model has a place for a plaintext secret except `SubscriptionWithSecret`, which only
the create and rotate operations return.
"""

from typing import TYPE_CHECKING, Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field

from jobhooks.alerts.limits import (
    DEFAULT_MIN_OUTCOMES as DEFAULT_ALERT_MIN_OUTCOMES,
)
from jobhooks.alerts.limits import (
    DEFAULT_WINDOW as DEFAULT_ALERT_WINDOW,
)
from jobhooks.alerts.limits import (
    MAX_MIN_OUTCOMES as MAX_ALERT_MIN_OUTCOMES,
)
from jobhooks.alerts.limits import (
    MAX_P95_MS as MAX_ALERT_P95_MS,
)
from jobhooks.alerts.limits import (
    MAX_PATTERN_LENGTH as MAX_ALERT_PATTERN_LENGTH,
)
from jobhooks.alerts.limits import (
    MAX_WINDOW as MAX_ALERT_WINDOW,
)
from jobhooks.alerts.limits import (
    MIN_WINDOW as MIN_ALERT_WINDOW,
)
from jobhooks.delivery.limits import DELIVERY_ID_PATTERN as DELIVERY_ID_PATTERN
from jobhooks.delivery.limits import MAX_URL_LENGTH
from jobhooks.ingest.limits import QUARANTINE_ID_PATTERN as QUARANTINE_ID_PATTERN
from jobhooks.moved_names import moved_name
from jobhooks.subscriptions.model import (
    DEFAULT_EVENT_TYPES,
    DEFAULT_GRACE,
    MAX_DESCRIPTION_LENGTH,
    MAX_GRACE,
    MAX_JOB_NAME_PATTERN_LENGTH,
    MAX_JOB_NAME_PATTERNS,
    MAX_TENANT_ID_LENGTH,
    EventType,
    SubscriptionStatus,
)
from jobhooks.subscriptions.model import SUBSCRIPTION_ID_PATTERN as SUBSCRIPTION_ID_PATTERN

if TYPE_CHECKING:
    from jobhooks.management.operator_models import AnalyticsAnswer as AnalyticsAnswer
    from jobhooks.management.operator_models import AnalyticsQuestion as AnalyticsQuestion
    from jobhooks.management.operator_models import AnalyticsQuestionList as AnalyticsQuestionList
    from jobhooks.management.operator_models import AnalyticsRows as AnalyticsRows
    from jobhooks.management.operator_models import DeadLetterListing as DeadLetterListing
    from jobhooks.management.operator_models import DeadLetterQueue as DeadLetterQueue
    from jobhooks.management.operator_models import EventReplay as EventReplay
    from jobhooks.management.operator_models import GrantList as GrantList
    from jobhooks.management.operator_models import GrantRequest as GrantRequest
    from jobhooks.management.operator_models import GrantView as GrantView
    from jobhooks.management.operator_models import MoveTaskView as MoveTaskView
    from jobhooks.management.operator_models import ParkedMessage as ParkedMessage
    from jobhooks.management.operator_models import PendingAnalyticsQuery as PendingAnalyticsQuery
    from jobhooks.management.operator_models import PortalLink as PortalLink
    from jobhooks.management.operator_models import PortalLinkRequest as PortalLinkRequest
    from jobhooks.management.operator_models import (
        QuarantinedMessageDetail as QuarantinedMessageDetail,
    )
    from jobhooks.management.operator_models import (
        QuarantinedMessageSummary as QuarantinedMessageSummary,
    )
    from jobhooks.management.operator_models import QuarantinePage as QuarantinePage
    from jobhooks.management.operator_models import (
        QuarantineReplayRequest as QuarantineReplayRequest,
    )
    from jobhooks.management.operator_models import QuarantineReplayResult as QuarantineReplayResult
    from jobhooks.management.operator_models import RedriveRequest as RedriveRequest
    from jobhooks.management.operator_models import RedriveResult as RedriveResult
    from jobhooks.management.operator_models import Revocation as Revocation
    from jobhooks.management.operator_models import RevocationRequest as RevocationRequest
    from jobhooks.management.operator_models import UnmatchedEvent as UnmatchedEvent
    from jobhooks.management.operator_models import UnmatchedEventPage as UnmatchedEventPage

# Ids as the bridge issues them. Path parameters are held to these shapes before any lookup, so
# a mistyped id is a 422 that says so, never a confusing error from DynamoDB.
# Their patterns are kept where the ids are made (SUBSCRIPTION_ID_PATTERN, DELIVERY_ID_PATTERN,
# QUARANTINE_ID_PATTERN, imported above): the cursors of listings check them too.
# A `ce-id` (fetcher.job.<status>.<job id>): the characters that are safe in a path segment.
EVENT_ID_PATTERN: Final = r"^[A-Za-z0-9._~:@+=-]{1,512}$"
CURSOR_MAX_LENGTH: Final = 2048
# The names of the reviewed questions (`jobhooks.analytics.questions`), and Athena's query ids.
QUESTION_NAME_PATTERN: Final = r"^[a-z][a-z0-9_]{0,63}$"
QUERY_ID_PATTERN: Final = r"^[A-Za-z0-9_-]{1,128}$"
# An ISO 8601 date or time: longer texts are refused before they are parsed.
WINDOW_BOUND_MAX_LENGTH: Final = 40
TEST_EVENT_TYPE: Final = "jobhooks.test"

Timestamp = Annotated[
    str,
    Field(
        description="RFC 3339 UTC with milliseconds, e.g. 2026-03-01T12:00:00.000Z",
        json_schema_extra={"format": "date-time"},
    ),
]


class _Model(BaseModel):
    # Built on first use, not at import: a request touches a few of these models, and the API's
    # cold start need not build the validators of all of them (docs/performance.md).
    model_config = ConfigDict(defer_build=True)


class _Request(_Model):
    # Unknown fields are refused: a misspelt field would otherwise be silently ignored.
    model_config = ConfigDict(extra="forbid", defer_build=True)


# -- errors ----------------------------------------------------------------------------------


class ErrorDetail(_Model):
    code: str = Field(description="stable error code, e.g. address_not_public")
    message: str = Field(description="what went wrong and what to do; starts with the field")
    field: str | None = Field(
        default=None, description="the request field at fault, when there is one"
    )


class ErrorBody(_Model):
    """Every error answer of the API."""

    error: ErrorDetail


# -- subscriptions ---------------------------------------------------------------------------

JobNamePatterns = Annotated[
    list[Annotated[str, Field(max_length=MAX_JOB_NAME_PATTERN_LENGTH)]],
    Field(max_length=MAX_JOB_NAME_PATTERNS),
]


class CreateSubscriptionRequest(_Request):
    tenant_id: str = Field(
        min_length=1,
        max_length=MAX_TENANT_ID_LENGTH,
        description="the tenant (the X-Tenant-ID Fetcher signs) whose events this receives",
    )
    url: str = Field(
        min_length=1,
        max_length=MAX_URL_LENGTH,
        description="https URL of a public host; checked against the network policy now and "
        "before every delivery",
    )
    event_types: list[EventType] = Field(
        default_factory=lambda: list(DEFAULT_EVENT_TYPES),
        min_length=1,
        description="event types to receive (default: job.completed and job.failed; the "
        "notification types are listed explicitly, docs/notifications.md)",
    )
    job_names: JobNamePatterns = Field(
        default_factory=list,
        description="glob patterns (billing-*) an outcome's job_name must match; empty: every job",
    )
    description: str | None = Field(default=None, max_length=MAX_DESCRIPTION_LENGTH)


class UpdateSubscriptionRequest(_Request):
    """Only the fields given change; `description: ""` clears the description."""

    url: str | None = Field(default=None, min_length=1, max_length=MAX_URL_LENGTH)
    event_types: list[EventType] | None = Field(default=None, min_length=1)
    job_names: JobNamePatterns | None = Field(
        default=None, description="the new job filter (glob patterns); [] removes it"
    )
    description: str | None = Field(default=None, max_length=MAX_DESCRIPTION_LENGTH)
    status: SubscriptionStatus | None = Field(
        default=None, description="active (deliveries resume) or disabled (deliveries stop)"
    )


class RotateSecretRequest(_Request):
    grace_seconds: int = Field(
        default=int(DEFAULT_GRACE.total_seconds()),
        ge=0,
        le=int(MAX_GRACE.total_seconds()),
        description="how long the previous secret keeps signing (default 24 h, at most 7 days)",
    )


class SecretInfo(_Model):
    """A signing secret's metadata; the secret itself is never listed."""

    secret_id: str
    created_at: Timestamp
    expires_at: Timestamp | None = Field(
        default=None, description="when it stops signing; null for the current secret"
    )


class SubscriptionView(_Model):
    subscription_id: str
    tenant_id: str
    url: str
    event_types: list[EventType]
    job_names: list[str] = Field(
        default_factory=list, description="the job filter: glob patterns; empty: every job"
    )
    status: SubscriptionStatus
    description: str | None = None
    disabled_reason: str | None = None
    created_at: Timestamp
    updated_at: Timestamp
    secrets: list[SecretInfo] = Field(
        description="signing secrets that still sign, newest (current) first"
    )


class SubscriptionWithSecret(SubscriptionView):
    """Returned by create and rotate only: the one time the new secret is shown."""

    secret: str = Field(
        description="the new whsec_ signing secret; store it now, it is never shown again"
    )


class SubscriptionPage(_Model):
    subscriptions: list[SubscriptionView]
    next_cursor: str | None = Field(default=None, description="pass as `cursor` for the next page")


class RecoverRequest(_Request):
    since: str = Field(
        min_length=1,
        max_length=64,
        description="send again the deliveries created at this time or later (ISO 8601 with "
        "a time zone, e.g. 2026-12-06T01:00:00Z; not in the future)",
    )
    cursor: str | None = Field(
        default=None,
        max_length=CURSOR_MAX_LENGTH,
        description="`next_cursor` of the previous answer",
    )
    limit: int = Field(
        default=500, ge=1, le=1000, description="at most this many deliveries in this call"
    )


class RecoveryResult(_Model):
    subscription_id: str
    since: Timestamp
    sent: int = Field(description="deliveries sent to the delivery queue again by this call")
    by_status: dict[str, int] = Field(
        description="the deliveries sent, by the status they had: skipped, failed, parked, gone"
    )
    unavailable: int = Field(
        description="deliveries whose webhook body is no longer kept: they cannot be sent"
    )
    next_cursor: str | None = Field(
        default=None, description="more deliveries to recover: call again with this cursor"
    )


class TestSendResult(_Model):
    """The attempt a test send made: signed like a real webhook, recorded nowhere."""

    subscription_id: str
    event_type: str = TEST_EVENT_TYPE
    event_id: str
    webhook_id: str
    signatures: int = Field(description="number of signatures sent (2 or more during a rotation)")
    delivered: bool = Field(description="the receiver answered 2xx")
    status_code: int | None = None
    error: str | None = Field(
        default=None, description="why no HTTP status came back, e.g. timeout"
    )
    detail: str | None = None
    latency_ms: int
    response_excerpt: str = Field(
        default="", description="the start of the receiver's response body"
    )


# -- deliveries and events -------------------------------------------------------------------


class AttemptView(_Model):
    n: int
    at: Timestamp | None = None
    status_code: int | None = None
    error: str | None = None
    latency_ms: int | None = None
    response: str | None = Field(
        default=None, description="the start of the receiver's response body"
    )


class DeliverySummary(_Model):
    delivery_id: str
    event_id: str
    webhook_id: str | None = None
    subscription_id: str
    tenant_id: str | None = None
    event_type: str | None = None
    status: str = Field(description="pending, succeeded, failed, parked, gone or skipped")
    status_reason: str | None = Field(
        default=None,
        description="why it ended failed, parked, gone or skipped (e.g. subscription_disabled), "
        "or recovering: sent again by recover",
    )
    attempt_count: int
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None
    last_attempt: AttemptView | None = None


class DeliveryDetail(DeliverySummary):
    attempts: list[AttemptView] = Field(description="every attempt, oldest first")


class DeliveryPage(_Model):
    deliveries: list[DeliverySummary]
    next_cursor: str | None = None


class ReplayedDelivery(_Model):
    delivery_id: str
    event_id: str
    subscription_id: str
    webhook_id: str
    replay: bool = True


# -- job-health alerts -----------------------------------------------------------------------

ALERT_RULE_ID_PATTERN: Final = r"^alr_[A-Za-z0-9_-]{1,64}$"
DEFAULT_ALERT_WINDOW_SECONDS: Final = int(DEFAULT_ALERT_WINDOW.total_seconds())
MIN_ALERT_WINDOW_SECONDS: Final = int(MIN_ALERT_WINDOW.total_seconds())
MAX_ALERT_WINDOW_SECONDS: Final = int(MAX_ALERT_WINDOW.total_seconds())


class _AlertRuleFields(_Request):
    job_name: str = Field(
        min_length=1,
        max_length=MAX_ALERT_PATTERN_LENGTH,
        description="a job name or a glob pattern (billing-*) matched against the outcomes' "
        "job_name; each matching job is judged on its own",
    )
    failure_rate: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="degraded when the job's failure rate over the window is at or above this "
        "fraction (0.2 is 20 %)",
    )
    p95_ms: int | None = Field(
        default=None,
        gt=0,
        le=MAX_ALERT_P95_MS,
        description="degraded when the p95 of the job's measured durations is at or above this",
    )
    min_outcomes: int = Field(
        default=DEFAULT_ALERT_MIN_OUTCOMES,
        ge=1,
        le=MAX_ALERT_MIN_OUTCOMES,
        description="the outcomes (and, for p95_ms, measured durations) the window must hold "
        "for a verdict; with fewer, the job keeps its state",
    )
    window_seconds: int = Field(
        default=DEFAULT_ALERT_WINDOW_SECONDS,
        ge=MIN_ALERT_WINDOW_SECONDS,
        le=MAX_ALERT_WINDOW_SECONDS,
        description="how far back each evaluation looks (default 900: 15 minutes)",
    )


class CreateAlertRuleRequest(_AlertRuleFields):
    """A rule needs `failure_rate`, `p95_ms` or both."""

    tenant_id: str = Field(min_length=1, max_length=MAX_TENANT_ID_LENGTH)


class PortalAlertRuleRequest(_AlertRuleFields):
    """A new rule of the session's tenant (the tenant comes from the session, never here)."""


class DegradedJobView(_Model):
    job_name: str
    degraded_since: Timestamp
    outcomes: int
    failures: int
    failure_rate: float
    p95_duration_ms: int | None = None


class AlertView(_Model):
    """One alert a rule sent."""

    rule_id: str
    type: str = Field(description="job_health.degraded or job_health.recovered")
    job_name: str
    at: Timestamp
    outcomes: int
    failures: int
    failure_rate: float
    p95_duration_ms: int | None = None
    deliveries: int = Field(description="the tenant's subscriptions it was delivered to")


class AlertRuleView(_Model):
    rule_id: str
    tenant_id: str
    job_name: str
    failure_rate: float | None = None
    p95_ms: int | None = None
    min_outcomes: int
    window_seconds: int
    created_at: Timestamp
    degraded: list[DegradedJobView] = Field(
        default_factory=list, description="the jobs this rule finds degraded now"
    )


class AlertRuleList(_Model):
    rules: list[AlertRuleView]
    recent_alerts: list[AlertView] = Field(
        description="the rules' latest alerts, newest first (20 per rule at most)"
    )


# Defined in `jobhooks.management.operator_models` (the portal function does not load it);
# still exported from here, on first use.
_MOVED: Final = dict.fromkeys(
    (
        "EventReplay",
        "UnmatchedEvent",
        "UnmatchedEventPage",
        "QuarantinedMessageSummary",
        "QuarantinedMessageDetail",
        "QuarantinePage",
        "QuarantineReplayRequest",
        "QuarantineReplayResult",
        "DeadLetterQueue",
        "ParkedMessage",
        "MoveTaskView",
        "DeadLetterListing",
        "RedriveRequest",
        "RedriveResult",
        "AnalyticsQuestion",
        "AnalyticsQuestionList",
        "AnalyticsAnswer",
        "AnalyticsRows",
        "PendingAnalyticsQuery",
        "PortalLinkRequest",
        "PortalLink",
        "RevocationRequest",
        "Revocation",
        "GrantRequest",
        "GrantView",
        "GrantList",
    ),
    "jobhooks.management.operator_models",
)


def __getattr__(name: str) -> Any:
    return moved_name(__name__, name, _MOVED)
