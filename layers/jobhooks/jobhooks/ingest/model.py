"""What ingest works with: claims, event records, quarantined messages and the use case's results.

Plain data, no AWS client: the use case (`service`), its ports (`ports`) and the DynamoDB adapters
(`claims`, `quarantine`) all speak in these types.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from jobhooks.inbound.rejection import Reason
from jobhooks.ingest.limits import QUARANTINE_ID_PATTERN as QUARANTINE_ID_PATTERN
from jobhooks.storage.times import format_time

# -- claims (ClaimsTable) ------------------------------------------------------------------------


class ClaimState(StrEnum):
    IN_PROGRESS = "in_progress"
    DONE = "done"


class TakeOver(StrEnum):
    """Why a claim replaced an existing item."""

    EXPIRED = "expired"
    LEASE_EXPIRED = "lease_expired"


@dataclass(frozen=True, slots=True)
class Claim:
    """A claim this invocation holds; `token` proves it in every later write."""

    event_id: str
    tenant_id: str
    event_type: str
    job_id: str
    token: str
    lease_until_ms: int
    took_over: TakeOver | None = None
    signed_at: int | None = None
    """The claiming copy's `t`: the claim outlives every copy signed no later (claim_retention)."""


# Events one completion record lists: about 1 KB per ten, far below DynamoDB's 400 KB item.
MAX_EVENTS_PER_BATCH_RECORD: Final = 100


@dataclass(frozen=True, slots=True)
class FanOutPlan:
    """What a claim records when it is made: the fan-out decided before the claim, and the
    completion record (`batch_id`) that will say the fan-out was done."""

    batch_id: str
    payload: str
    subscription_ids: tuple[str, ...]

    @property
    def matched(self) -> int:
        return len(self.subscription_ids)


@dataclass(frozen=True, slots=True)
class EventRecord:
    """A stored claim: an event in progress, or done with its fan-out recorded."""

    event_id: str
    state: ClaimState
    tenant_id: str
    event_type: str
    job_id: str
    claimed_at: datetime | None
    expires_at: datetime
    lease_until_ms: int | None = None
    done_at: datetime | None = None
    matched: int | None = None
    payload: str | None = None
    unmatched: bool = False
    subscription_ids: tuple[str, ...] | None = None
    """The subscriptions the event was fanned out to, sorted; None when the record does not say
    (in progress, or completed before the claim recorded them)."""
    batch_id: str | None = None
    """The ingest batch that claimed the event (its completion record's id, and the sort key of
    the first-attempt pages of its deliveries); None for claims made before claims named one."""

    def to_dict(self, *, include_payload: bool = True) -> dict[str, Any]:
        """JSON-ready, for the management API and CLI."""
        document: dict[str, Any] = {
            "event_id": self.event_id,
            "state": self.state.value,
            "tenant_id": self.tenant_id,
            "event_type": self.event_type,
            "job_id": self.job_id,
            "claimed_at": _text(self.claimed_at),
            "done_at": _text(self.done_at),
            "expires_at": _text(self.expires_at),
            "matched": self.matched,
            "unmatched": self.unmatched,
        }
        if self.state is ClaimState.IN_PROGRESS:
            document["lease_until_ms"] = self.lease_until_ms
        if include_payload:
            document["payload"] = self.payload
        return document


@dataclass(frozen=True, slots=True)
class Duplicate:
    """The event was already ingested; `existing` is its record."""

    existing: EventRecord


@dataclass(frozen=True, slots=True)
class EventPage:
    events: tuple[EventRecord, ...]
    next_cursor: str | None


# -- quarantined messages (QuarantineTable) ------------------------------------------------------


class QuarantineStatus(StrEnum):
    QUARANTINED = "quarantined"
    REPLAYED = "replayed"


@dataclass(frozen=True, slots=True)
class QuarantinedMessage:
    quarantine_id: str
    reason: Reason
    detail: str
    message: str
    """The original SQS body, verbatim (only its head when `message_truncated`)."""
    sqs_message_id: str
    sent_at: datetime
    received_at: datetime
    expires_at: datetime
    status: QuarantineStatus = QuarantineStatus.QUARANTINED
    event_id: str | None = None
    """The `ce-id` header as the message claims it: unverified, for finding related records."""
    message_bytes: int = 0
    message_truncated: bool = False
    replay_of: str | None = None
    replayed_at: datetime | None = None
    replay_outcome: str | None = None
    replayed_as: str | None = None

    def to_dict(self, *, include_message: bool = True) -> dict[str, Any]:
        """JSON-ready, for the management API and CLI."""
        document: dict[str, Any] = {
            "quarantine_id": self.quarantine_id,
            "reason": self.reason.value,
            "detail": self.detail,
            "event_id": self.event_id,
            "sqs_message_id": self.sqs_message_id,
            "sent_at": format_time(self.sent_at),
            "received_at": format_time(self.received_at),
            "expires_at": format_time(self.expires_at),
            "status": self.status.value,
            "message_bytes": self.message_bytes,
            "message_truncated": self.message_truncated,
            "replay_of": self.replay_of,
            "replayed_at": format_time(self.replayed_at) if self.replayed_at else None,
            "replay_outcome": self.replay_outcome,
            "replayed_as": self.replayed_as,
        }
        if include_message:
            document["message"] = self.message
        return document


@dataclass(frozen=True, slots=True)
class QuarantinePage:
    messages: tuple[QuarantinedMessage, ...]
    next_cursor: str | None


# -- the use case's results ----------------------------------------------------------------------


class IngestOutcome(StrEnum):
    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True)
class IngestResult:
    outcome: IngestOutcome
    event_id: str | None = None
    """The verified `ce-id`; for a rejection, the one the message claims (unverified)."""
    deliveries: int = 0
    reason: Reason | None = None
    quarantine_id: str | None = None

    @property
    def summary(self) -> str:
        """`accepted`, `duplicate` or `rejected:<reason>`."""
        if self.reason is not None:
            return f"{self.outcome.value}:{self.reason.value}"
        return self.outcome.value

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome.value,
            "event_id": self.event_id,
            "deliveries": self.deliveries,
            "reason": self.reason.value if self.reason else None,
            "quarantine_id": self.quarantine_id,
        }


@dataclass(frozen=True, slots=True)
class FanOutResult:
    event_id: str
    deliveries: int
    subscription_ids: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "deliveries": self.deliveries,
            "subscription_ids": list(self.subscription_ids),
        }


def _text(moment: datetime | None) -> str | None:
    return format_time(moment) if moment is not None else None
