"""Request and response shapes of the routes only the management API serves: events,
quarantine, dead-letter queues, analytics, portal links and revocations, grants.

They are `jobhooks.management.models`' shapes (same base classes, same rules), kept apart so
that the portal function, which serves none of these routes, does not define them at its cold
start (docs/performance.md). `jobhooks.management.models` still exports every name here.
"""

from enum import StrEnum
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

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
from jobhooks.management.models import ReplayedDelivery, Timestamp, _Model, _Request
from jobhooks.management.settings import RedriveMethod

# -- events ----------------------------------------------------------------------------------


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
    reason: str = Field(description="the rejection reason code (docs/forwarded-message.md)")
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
