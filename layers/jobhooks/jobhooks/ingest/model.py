"""What ingest works with: claims, event records and the use case's results (quarantined messages:
`quarantined`; what the management API's reads return: `reads`).

Plain data, no AWS client: the use case (`service`), its ports (`ports`) and the DynamoDB adapters
(`claims`, `quarantine`) all speak in these types.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

from jobhooks.frozen_record import FrozenRecord
from jobhooks.inbound.rejection import Reason
from jobhooks.ingest.limits import QUARANTINE_ID_PATTERN as QUARANTINE_ID_PATTERN
from jobhooks.moved_names import moved_name
from jobhooks.storage.times import format_time

if TYPE_CHECKING:
    from jobhooks.ingest.quarantined import QuarantinedMessage as QuarantinedMessage
    from jobhooks.ingest.quarantined import QuarantinePage as QuarantinePage
    from jobhooks.ingest.quarantined import QuarantineStatus as QuarantineStatus
    from jobhooks.ingest.reads import EventPage as EventPage
    from jobhooks.ingest.reads import FanOutResult as FanOutResult

# Names that live in modules of their own, so that the ingest function's cold start does not
# define them (`quarantined`: rejected messages only; `reads`: the management API's), still
# importable from here: each loads its module on first use.
_MOVED: Final = {
    "QuarantineStatus": "jobhooks.ingest.quarantined",
    "QuarantinedMessage": "jobhooks.ingest.quarantined",
    "QuarantinePage": "jobhooks.ingest.quarantined",
    "EventPage": "jobhooks.ingest.reads",
    "FanOutResult": "jobhooks.ingest.reads",
}


def __getattr__(name: str) -> Any:
    return moved_name(__name__, name, _MOVED)


# -- claims (ClaimsTable) ------------------------------------------------------------------------


class ClaimState(StrEnum):
    IN_PROGRESS = "in_progress"
    DONE = "done"


class TakeOver(StrEnum):
    """Why a claim replaced an existing item."""

    EXPIRED = "expired"
    LEASE_EXPIRED = "lease_expired"


class Claim(FrozenRecord):
    """A claim this invocation holds; `token` proves it in every later write."""

    __slots__ = (
        "event_id",
        "event_type",
        "job_id",
        "lease_until_ms",
        "signed_at",
        "tenant_id",
        "token",
        "took_over",
    )
    event_id: str
    tenant_id: str
    event_type: str
    job_id: str
    token: str
    lease_until_ms: int
    took_over: TakeOver | None
    signed_at: int | None
    """The claiming copy's `t`: the claim outlives every copy signed no later (claim_retention)."""

    def __init__(
        self,
        event_id: str,
        tenant_id: str,
        event_type: str,
        job_id: str,
        token: str,
        lease_until_ms: int,
        took_over: TakeOver | None = None,
        signed_at: int | None = None,
    ) -> None:
        object.__setattr__(self, "event_id", event_id)
        object.__setattr__(self, "tenant_id", tenant_id)
        object.__setattr__(self, "event_type", event_type)
        object.__setattr__(self, "job_id", job_id)
        object.__setattr__(self, "token", token)
        object.__setattr__(self, "lease_until_ms", lease_until_ms)
        object.__setattr__(self, "took_over", took_over)
        object.__setattr__(self, "signed_at", signed_at)


# Events one completion record lists: about 1 KB per ten, far below DynamoDB's 400 KB item.
MAX_EVENTS_PER_BATCH_RECORD: Final = 100


class FanOutPlan(FrozenRecord):
    """What a claim records when it is made: the fan-out decided before the claim, and the
    completion record (`batch_id`) that will say the fan-out was done."""

    __slots__ = ("batch_id", "payload", "subscription_ids")
    batch_id: str
    payload: str
    subscription_ids: tuple[str, ...]

    def __init__(self, batch_id: str, payload: str, subscription_ids: tuple[str, ...]) -> None:
        object.__setattr__(self, "batch_id", batch_id)
        object.__setattr__(self, "payload", payload)
        object.__setattr__(self, "subscription_ids", subscription_ids)

    @property
    def matched(self) -> int:
        return len(self.subscription_ids)


class EventRecord(FrozenRecord):
    """A stored claim: an event in progress, or done with its fan-out recorded."""

    __slots__ = (
        "batch_id",
        "claimed_at",
        "done_at",
        "event_id",
        "event_type",
        "expires_at",
        "job_id",
        "lease_until_ms",
        "matched",
        "payload",
        "state",
        "subscription_ids",
        "tenant_id",
        "unmatched",
    )
    event_id: str
    state: ClaimState
    tenant_id: str
    event_type: str
    job_id: str
    claimed_at: datetime | None
    expires_at: datetime
    lease_until_ms: int | None
    done_at: datetime | None
    matched: int | None
    payload: str | None
    unmatched: bool
    subscription_ids: tuple[str, ...] | None
    """The subscriptions the event was fanned out to, sorted; None when the record does not say
    (in progress, or completed before the claim recorded them)."""
    batch_id: str | None
    """The ingest batch that claimed the event (its completion record's id, and the sort key of
    the first-attempt pages of its deliveries); None for claims made before claims named one."""

    def __init__(
        self,
        event_id: str,
        state: ClaimState,
        tenant_id: str,
        event_type: str,
        job_id: str,
        claimed_at: datetime | None,
        expires_at: datetime,
        lease_until_ms: int | None = None,
        done_at: datetime | None = None,
        matched: int | None = None,
        payload: str | None = None,
        unmatched: bool = False,
        subscription_ids: tuple[str, ...] | None = None,
        batch_id: str | None = None,
    ) -> None:
        object.__setattr__(self, "event_id", event_id)
        object.__setattr__(self, "state", state)
        object.__setattr__(self, "tenant_id", tenant_id)
        object.__setattr__(self, "event_type", event_type)
        object.__setattr__(self, "job_id", job_id)
        object.__setattr__(self, "claimed_at", claimed_at)
        object.__setattr__(self, "expires_at", expires_at)
        object.__setattr__(self, "lease_until_ms", lease_until_ms)
        object.__setattr__(self, "done_at", done_at)
        object.__setattr__(self, "matched", matched)
        object.__setattr__(self, "payload", payload)
        object.__setattr__(self, "unmatched", unmatched)
        object.__setattr__(self, "subscription_ids", subscription_ids)
        object.__setattr__(self, "batch_id", batch_id)

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


class Duplicate(FrozenRecord):
    """The event was already ingested; `existing` is its record."""

    __slots__ = ("existing",)
    existing: EventRecord

    def __init__(self, existing: EventRecord) -> None:
        object.__setattr__(self, "existing", existing)


# -- the use case's results ----------------------------------------------------------------------


class IngestOutcome(StrEnum):
    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"
    REJECTED = "rejected"


class IngestResult(FrozenRecord):
    """What ingesting one message came to."""

    __slots__ = ("deliveries", "event_id", "outcome", "quarantine_id", "reason")
    outcome: IngestOutcome
    event_id: str | None
    """The verified `ce-id`; for a rejection, the one the message claims (unverified)."""
    deliveries: int
    reason: Reason | None
    quarantine_id: str | None

    def __init__(
        self,
        outcome: IngestOutcome,
        event_id: str | None = None,
        deliveries: int = 0,
        reason: Reason | None = None,
        quarantine_id: str | None = None,
    ) -> None:
        object.__setattr__(self, "outcome", outcome)
        object.__setattr__(self, "event_id", event_id)
        object.__setattr__(self, "deliveries", deliveries)
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "quarantine_id", quarantine_id)

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


def _text(moment: datetime | None) -> str | None:
    return format_time(moment) if moment is not None else None
