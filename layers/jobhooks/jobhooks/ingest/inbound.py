"""One message as the ingest use case receives it: an SQS record, or a quarantined one replayed.

The receipt clock is SQS's `SentTimestamp` (README, "Freshness and replay"): when the shovel
handed the message to SQS, not when a possibly much later invocation got to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from jobhooks.frozen_record import FrozenRecord
from jobhooks.inbound.envelope import ForwardedMessage, header_text
from jobhooks.inbound.rejection import RejectedMessageError

# A ce-id the bridge keeps for a message it could not verify (quarantine, DLQ listings).
MAX_EVENT_ID_CHARS: Final = 512


class InboundMessage(FrozenRecord):
    """One record of the ingest queue, as ingest reads it."""

    __slots__ = ("body", "message_id", "receipt_handle", "replay_of", "sent_at")
    body: str
    """The SQS body, verbatim: the `jobhooks.amqp/1` forwarded message (or anything else)."""
    message_id: str
    """The SQS message id (of the original message, for a replay)."""
    sent_at: datetime
    """The receipt clock freshness is judged against."""
    replay_of: str | None
    """The quarantine id this message is a replay of."""
    receipt_handle: str | None
    """The SQS receipt handle of this receipt (none for a replay)."""

    def __init__(
        self,
        body: str,
        message_id: str,
        sent_at: datetime,
        replay_of: str | None = None,
        receipt_handle: str | None = None,
    ) -> None:
        object.__setattr__(self, "body", body)
        object.__setattr__(self, "message_id", message_id)
        object.__setattr__(self, "sent_at", sent_at)
        object.__setattr__(self, "replay_of", replay_of)
        object.__setattr__(self, "receipt_handle", receipt_handle)

    @classmethod
    def from_lambda_record(
        cls, record: Mapping[str, Any], *, fallback_clock: datetime | None = None
    ) -> InboundMessage:
        """A record of a Lambda SQS event (`Records[n]`)."""
        attributes = record.get("attributes") or {}
        sent_at = parse_sent_timestamp(attributes.get("SentTimestamp"))
        if sent_at is None:
            # Lambda always sets it; only a hand-made test event can lack it.
            sent_at = fallback_clock or datetime.now(UTC)
        return cls(
            body=str(record.get("body", "")),
            message_id=record["messageId"],
            sent_at=sent_at,
            receipt_handle=record.get("receiptHandle"),
        )


def parse_sent_timestamp(value: object) -> datetime | None:
    """SQS's `SentTimestamp`: epoch milliseconds as a decimal string."""
    if not isinstance(value, str | int) or isinstance(value, bool):
        return None
    try:
        return datetime.fromtimestamp(int(value) / 1000, UTC)
    except (ValueError, OverflowError, OSError):
        return None


def claimed_event_id(body: str) -> str | None:
    """The `ce-id` a rejected message names, if its envelope can be read at all."""
    try:
        message = ForwardedMessage.from_json(body)
    except RejectedMessageError:
        return None
    text = header_text(message.headers.get("ce-id"))
    return text[:MAX_EVENT_ID_CHARS] if text else None
