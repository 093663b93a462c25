"""Quarantined messages (QuarantineTable): what ingest rejected, kept for the operators.

Apart from `ingest.model` because few invocations need them: a message is quarantined only when
it is rejected, and the pages are the management API's reads. Every ingest cold start imported
them for nothing (three classes, about 2 ms of CPU); `ingest.model` still exports the names.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from jobhooks.inbound.rejection import Reason
from jobhooks.storage.times import format_time


class QuarantineStatus(StrEnum):
    QUARANTINED = "quarantined"
    REPLAYED = "replayed"


@dataclass(frozen=True, slots=True)
class QuarantinedMessage:
    """A message ingest rejected, as the quarantine table keeps it."""

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
    """One page of quarantined messages (the management API's list)."""

    messages: tuple[QuarantinedMessage, ...]
    next_cursor: str | None
