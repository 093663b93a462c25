"""Request and response shapes of the management API.

The OpenAPI document (docs/openapi.json) is generated from these models, and the Event Handler
validates every request against them before an operation runs, so their constraints are the
API's documented input rules. Times are RFC 3339 UTC strings with milliseconds and `Z`.

No response model has a place for a plaintext secret except `SubscriptionWithSecret`, which only
the create and rotate operations return.
"""

from enum import StrEnum
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from jobhooks.access.grants import (
    MAX_DESCRIPTION_LENGTH as MAX_GRANT_DESCRIPTION,
)
from jobhooks.access.grants import (
    MAX_PATTERN_LENGTH,
    MAX_TENANTS_PER_GRANT,
)
from jobhooks.access.grants import MAX_TENANT_ID_LENGTH as MAX_GRANT_TENANT_ID
from jobhooks.access.limits import (
    DEFAULT_LINK_TTL,
    MAX_LINK_TTL,
    MIN_LINK_TTL,
    SESSION_ID_PATTERN,
)
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
from jobhooks.delivery.network_policy import MAX_URL_LENGTH
from jobhooks.ingest.limits import QUARANTINE_ID_PATTERN as QUARANTINE_ID_PATTERN
from jobhooks.management.settings import RedriveMethod
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


class EventReplay(_Model):
    event_id: str
    tenant_id: str
    event_type: str
    deliveries: list[ReplayedDelivery] = Field(
        description="one delivery per subscription that wants the event now"
    )


class UnmatchedEvent(_Model):
    event_id: str
    tenant_id: str
    event_type: str
    job_id: str
    done_at: Timestamp | None = None
    expires_at: Timestamp


class UnmatchedEventPage(_Model):
    events: list[UnmatchedEvent]
    next_cursor: str | None = None


# -- quarantine ------------------------------------------------------------------------------


class QuarantinedMessageSummary(_Model):
    quarantine_id: str
    reason: str = Field(description="the rejection reason code (contracts/forwarded-message.md)")
    detail: str
    event_id: str | None = Field(
        default=None, description="the ce-id the message claims (unverified)"
    )
    sqs_message_id: str
    sent_at: Timestamp
    received_at: Timestamp
    expires_at: Timestamp
    status: str = Field(description="quarantined or replayed")
    message_bytes: int
    message_truncated: bool
    replay_of: str | None = None
    replayed_at: Timestamp | None = None
    replay_outcome: str | None = None
    replayed_as: str | None = None


class QuarantinedMessageDetail(QuarantinedMessageSummary):
    message: str = Field(description="the original SQS body, verbatim")


class QuarantinePage(_Model):
    messages: list[QuarantinedMessageSummary]
    next_cursor: str | None = None


class QuarantineReplayRequest(_Request):
    allow_stale: bool = Field(
        default=False,
        description="accept a `t` older than the dedup retention (the stale_timestamp rule) "
        "for this one replay; every other rule still applies",
    )


class QuarantineReplayResult(_Model):
    quarantine_id: str
    outcome: str = Field(description="accepted, duplicate or rejected")
    event_id: str | None = None
    deliveries: int | None = Field(default=None, description="deliveries enqueued (accepted only)")
    reason: str | None = Field(default=None, description="the reason code (rejected only)")
    detail: str | None = None
    quarantined_as: str | None = Field(
        default=None, description="the new quarantine record of a replay that was rejected again"
    )


# -- dead-letter queues ----------------------------------------------------------------------


class DeadLetterQueue(StrEnum):
    DELIVERY = "delivery"
    INGEST = "ingest"
    # Analytics rows and first-attempt pages the spill function could not write for a day.
    SPILL = "spill"


class ParkedMessage(_Model):
    """One message peeked in a dead-letter queue (it stays there)."""

    message_id: str
    sent_at: Timestamp | None = None
    receive_count: int | None = None
    size_bytes: int
    delivery_id: str | None = None
    event_id: str | None = None
    subscription_id: str | None = None
    tenant_id: str | None = None
    event_type: str | None = None
    park_reason: str | None = Field(
        default=None, description="attempts_exhausted, subscription_disabled or invalid_task"
    )
    attempts: int | None = None
    last_result: str | None = Field(default=None, description="e.g. http_500 or timeout")
    spill_kind: str | None = Field(
        default=None, description="spill queue: analytics_rows or first_attempt_pages"
    )
    spilled_items: int | None = Field(
        default=None, description="spill queue: how many rows or pages the message holds"
    )


class MoveTaskView(_Model):
    status: str
    moved: int | None = None
    to_move: int | None = None
    started_at: Timestamp | None = None
    failure_reason: str | None = None


class DeadLetterListing(_Model):
    queue: DeadLetterQueue
    approximate_count: int = Field(description="messages waiting in the queue")
    approximate_in_flight: int = Field(description="messages received and not yet deleted")
    messages: list[ParkedMessage] = Field(description="up to `limit` messages, peeked")
    move_task: MoveTaskView | None = Field(
        default=None, description="the latest message-move task (AWS only)"
    )


class RedriveRequest(_Request):
    queue: DeadLetterQueue = DeadLetterQueue.DELIVERY
    method: RedriveMethod | None = Field(
        default=None, description="override the configured JOBHOOKS_DLQ_REDRIVE for this call"
    )
    max_messages: int | None = Field(
        default=None, ge=1, le=100_000, description="resend at most this many (resend method only)"
    )


class RedriveResult(_Model):
    queue: DeadLetterQueue
    method: str = Field(description="move_task or resend")
    moved: int | None = Field(default=None, description="messages sent back (resend)")
    remaining: int | None = Field(
        default=None,
        description="messages still parked after this call (resend); call again to go on",
    )
    task_handle: str | None = Field(default=None, description="the SQS move task (move_task)")


# -- analytics -------------------------------------------------------------------------------


class AnalyticsQuestion(_Model):
    name: str = Field(description="pass it to GET /v1/analytics/questions/{name}")
    question: str = Field(description="what it answers")
    grain: str = Field(description="what one row of the answer is")
    window: str = Field(description="which outcomes the window holds")
    unmeasured: str = Field(description="how values the events could not supply are left out")


class AnalyticsQuestionList(_Model):
    questions: list[AnalyticsQuestion]


class _AnalyticsWindow(_Model):
    model_config = ConfigDict(populate_by_name=True, defer_build=True)

    engine: str = Field(description="athena (a deployed stack) or duckdb (jobhooks dev)")
    window_from: Timestamp = Field(alias="from", description="the window's start (inclusive)")
    window_to: Timestamp = Field(alias="to", description="the window's end (exclusive)")


class AnalyticsAnswer(_AnalyticsWindow):
    """A question's answer: `rows` are lists of values in `columns` order."""

    question: str
    columns: list[str]
    rows: list[list[Any]]
    note: str | None = Field(
        description="says when the window holds no outcome, or nothing measured for the question"
    )


class AnalyticsRows(_AnalyticsWindow):
    """The deduplicated table: one object per event_id, every column, by timestamp_utc."""

    rows: list[dict[str, Any]]
    truncated: bool = Field(description="true when the window held more than the rows listed")


class PendingAnalyticsQuery(_AnalyticsWindow):
    """Athena is still running the query: poll GET /v1/analytics/queries/{query_id}."""

    question: str = Field(description="the question, or `rows` for the rows listing")
    status: Literal["running"]
    query_id: str
    state: str = Field(description="Athena's state: QUEUED or RUNNING")
    scanned_bytes: int = Field(description="bytes Athena has scanned so far")


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


# -- portal links and revocation (operators) --------------------------------------------------


class PortalLinkRequest(_Request):
    tenant_id: str = Field(
        min_length=1, max_length=MAX_GRANT_TENANT_ID, description="the tenant the link opens"
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

    tenant_id: str | None = Field(default=None, min_length=1, max_length=MAX_GRANT_TENANT_ID)
    session_id: str | None = Field(default=None, pattern=SESSION_ID_PATTERN)

    @model_validator(mode="after")
    def _exactly_one(self) -> "RevocationRequest":
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
    description: str = Field(default="", max_length=MAX_GRANT_DESCRIPTION)


class GrantView(_Model):
    grant_id: str
    principal_pattern: str
    tenants: list[str]
    description: str = ""
    created_at: Timestamp
    created_by: str = Field(description="the operator's ARN that added it")


class GrantList(_Model):
    grants: list[GrantView]
