"""Quarantine (`QuarantineTable`): every rejected message, kept with its reason and replayable.

A rejected message is acknowledged only after it was written here, so nothing invalid is retried
forever and nothing is dropped unseen (DESIGN.md, guarantee 3). The id is derived from the SQS
message id and its SentTimestamp, so a retry of the same delivery (say the write succeeded but
the acknowledgement did not) finds its record instead of adding a second one, while a replay,
which gets a new receipt time, gets a new record.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

from botocore.exceptions import ClientError

from jobhooks.clock import utc_now
from jobhooks.inbound.envelope import ForwardedMessage, header_text
from jobhooks.inbound.outcome import format_timestamp
from jobhooks.inbound.rejection import Reason, RejectedMessageError
from jobhooks.ingest.exceptions import (
    AwsServiceError,
    InvalidCursorError,
    InvalidPageSizeError,
    QuarantinedMessageNotFoundError,
    QuarantineTooLargeError,
    is_condition_failure,
)
from jobhooks.ingest.inbound import InboundMessage

BY_REASON_INDEX: Final = "by_reason"
DEFAULT_PAGE_SIZE: Final = 50
MAX_PAGE_SIZE: Final = 100
# A DynamoDB item holds at most 400 KB, attribute names included; SQS bodies go up to 1 MiB.
MAX_STORED_MESSAGE_BYTES: Final = 350_000
MAX_DETAIL_CHARS: Final = 1_000
MAX_EVENT_ID_CHARS: Final = 512


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
            "sent_at": format_timestamp(self.sent_at),
            "received_at": format_timestamp(self.received_at),
            "expires_at": format_timestamp(self.expires_at),
            "status": self.status.value,
            "message_bytes": self.message_bytes,
            "message_truncated": self.message_truncated,
            "replay_of": self.replay_of,
            "replayed_at": format_timestamp(self.replayed_at) if self.replayed_at else None,
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


def quarantine_id_for(message_id: str, sent_at: datetime) -> str:
    seed = f"{message_id}\n{int(sent_at.timestamp() * 1000)}"
    return "q_" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:32]


def claimed_event_id(body: str) -> str | None:
    """The `ce-id` a rejected message names, if its envelope can be read at all."""
    try:
        message = ForwardedMessage.from_json(body)
    except RejectedMessageError:
        return None
    text = header_text(message.headers.get("ce-id"))
    return text[:MAX_EVENT_ID_CHARS] if text else None


class QuarantineStore:
    """Writes and reads quarantined messages. `dynamodb` is a boto3 client."""

    def __init__(
        self,
        table_name: str,
        dynamodb: Any,
        *,
        retention_seconds: int,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.table_name = table_name
        self._dynamodb = dynamodb
        self._retention_seconds = retention_seconds
        self._clock = clock

    def quarantine_message(
        self, message: InboundMessage, rejection: RejectedMessageError
    ) -> QuarantinedMessage:
        """Keep `message` with its rejection; idempotent for retries of one SQS delivery.

        Raises `AwsServiceError` when the write fails (the record must then be retried, not
        acknowledged) and `QuarantineTooLargeError` after keeping the head of a message too large
        for an item (the record then fails on to the dead-letter queue, which keeps it whole).
        """
        now = self._clock()
        raw = message.body.encode("utf-8", errors="replace")
        truncated = len(raw) > MAX_STORED_MESSAGE_BYTES
        stored = raw[:MAX_STORED_MESSAGE_BYTES].decode("utf-8", errors="ignore")
        record = QuarantinedMessage(
            quarantine_id=quarantine_id_for(message.message_id, message.sent_at),
            reason=rejection.reason,
            detail=_bounded(rejection.detail),
            message=stored,
            sqs_message_id=message.message_id,
            sent_at=message.sent_at,
            received_at=now,
            expires_at=datetime.fromtimestamp(int(now.timestamp()) + self._retention_seconds, UTC),
            event_id=claimed_event_id(message.body),
            message_bytes=len(raw),
            message_truncated=truncated,
            replay_of=message.replay_of,
        )
        try:
            self._dynamodb.put_item(
                TableName=self.table_name,
                Item=_to_item(record),
                ConditionExpression="attribute_not_exists(quarantine_id)",
            )
        except ClientError as error:
            if not is_condition_failure(error):
                raise AwsServiceError.from_client_error("PutItem (quarantine)", error) from error
            # Already kept by an earlier receive of this very SQS message.
        if truncated:
            raise QuarantineTooLargeError(record.quarantine_id, len(raw))
        return record

    def get(self, quarantine_id: str) -> QuarantinedMessage:
        try:
            response = self._dynamodb.get_item(
                TableName=self.table_name,
                Key={"quarantine_id": {"S": quarantine_id}},
                ConsistentRead=True,
            )
        except ClientError as error:
            raise AwsServiceError.from_client_error("GetItem (quarantine)", error) from error
        item = response.get("Item")
        if item is None:
            raise QuarantinedMessageNotFoundError(quarantine_id)
        record = _from_item(item)
        if record.expires_at <= self._clock():
            raise QuarantinedMessageNotFoundError(quarantine_id)
        return record

    def list_messages(
        self,
        *,
        reason: Reason | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
    ) -> QuarantinePage:
        """One page: with `reason`, newest first through `by_reason`; without, in table order."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE_SIZE:
            raise InvalidPageSizeError(MAX_PAGE_SIZE)
        start_key = _decode_cursor(cursor, reason) if cursor else None
        now = self._clock()
        found: list[QuarantinedMessage] = []
        while len(found) <= limit:
            request: dict[str, Any] = {
                "TableName": self.table_name,
                "FilterExpression": "expires_at > :now",
                "ExpressionAttributeValues": {":now": {"N": str(int(now.timestamp()))}},
                "Limit": limit + 1 - len(found),
            }
            if start_key:
                request["ExclusiveStartKey"] = start_key
            try:
                if reason is None:
                    response = self._dynamodb.scan(**request)
                else:
                    request["IndexName"] = BY_REASON_INDEX
                    request["KeyConditionExpression"] = "reason = :reason"
                    request["ExpressionAttributeValues"][":reason"] = {"S": reason.value}
                    request["ScanIndexForward"] = False
                    response = self._dynamodb.query(**request)
            except ClientError as error:
                raise AwsServiceError.from_client_error("Query/Scan (quarantine)", error) from error
            found.extend(
                record
                for record in map(_from_item, response.get("Items", []))
                if record.expires_at > now
            )
            start_key = response.get("LastEvaluatedKey")
            if not start_key:
                break
        page = tuple(found[:limit])
        next_cursor = _encode_cursor(page[-1], reason) if len(found) > limit else None
        return QuarantinePage(page, next_cursor)

    def mark_replayed(
        self, quarantine_id: str, *, outcome: str, replayed_as: str | None = None
    ) -> None:
        now = self._clock()
        values: dict[str, Any] = {
            ":replayed": {"S": QuarantineStatus.REPLAYED.value},
            ":at": {"S": format_timestamp(now)},
            ":outcome": {"S": outcome},
        }
        update = "SET #status = :replayed, replayed_at = :at, replay_outcome = :outcome"
        if replayed_as:
            update += ", replayed_as = :as"
            values[":as"] = {"S": replayed_as}
        try:
            self._dynamodb.update_item(
                TableName=self.table_name,
                Key={"quarantine_id": {"S": quarantine_id}},
                UpdateExpression=update,
                ConditionExpression="attribute_exists(quarantine_id)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=values,
            )
        except ClientError as error:
            if is_condition_failure(error):
                raise QuarantinedMessageNotFoundError(quarantine_id) from None
            raise AwsServiceError.from_client_error(
                "UpdateItem (quarantine replayed)", error
            ) from error


def _to_item(record: QuarantinedMessage) -> dict[str, Any]:
    item: dict[str, Any] = {
        "quarantine_id": {"S": record.quarantine_id},
        "reason": {"S": record.reason.value},
        "detail": {"S": record.detail or "-"},
        "message": {"S": record.message},
        "sqs_message_id": {"S": record.sqs_message_id},
        "sent_at": {"S": format_timestamp(record.sent_at)},
        "received_at": {"S": format_timestamp(record.received_at)},
        "status": {"S": record.status.value},
        "expires_at": {"N": str(int(record.expires_at.timestamp()))},
        "message_bytes": {"N": str(record.message_bytes)},
    }
    if record.event_id:
        item["event_id"] = {"S": record.event_id}
    if record.message_truncated:
        item["message_truncated"] = {"BOOL": True}
    if record.replay_of:
        item["replay_of"] = {"S": record.replay_of}
    return item


def _from_item(item: dict[str, Any]) -> QuarantinedMessage:
    def text(name: str) -> str | None:
        value = item.get(name)
        return str(value["S"]) if value and "S" in value else None

    replayed_at = text("replayed_at")
    return QuarantinedMessage(
        quarantine_id=item["quarantine_id"]["S"],
        reason=Reason(item["reason"]["S"]),
        detail=text("detail") or "",
        message=text("message") or "",
        sqs_message_id=text("sqs_message_id") or "",
        sent_at=datetime.fromisoformat(item["sent_at"]["S"]),
        received_at=datetime.fromisoformat(item["received_at"]["S"]),
        expires_at=datetime.fromtimestamp(int(item["expires_at"]["N"]), UTC),
        status=QuarantineStatus(text("status") or QuarantineStatus.QUARANTINED.value),
        event_id=text("event_id"),
        message_bytes=int(item.get("message_bytes", {}).get("N", "0")),
        message_truncated=bool(item.get("message_truncated", {}).get("BOOL", False)),
        replay_of=text("replay_of"),
        replayed_at=datetime.fromisoformat(replayed_at) if replayed_at else None,
        replay_outcome=text("replay_outcome"),
        replayed_as=text("replayed_as"),
    )


def _bounded(detail: str) -> str:
    return detail if len(detail) <= MAX_DETAIL_CHARS else detail[: MAX_DETAIL_CHARS - 1] + "…"


def _encode_cursor(record: QuarantinedMessage, reason: Reason | None) -> str:
    document = {
        "q": record.quarantine_id,
        "r": reason.value if reason else None,
        "at": format_timestamp(record.received_at),
    }
    text = json.dumps(document, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, reason: Reason | None) -> dict[str, Any]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        document = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError):
        raise InvalidCursorError() from None
    # An empty key value would reach DynamoDB, which refuses it (ValidationException, a 502).
    if (
        not isinstance(document, dict)
        or not isinstance(document.get("q"), str)
        or document.get("r") != (reason.value if reason else None)
        or not isinstance(document.get("at"), str)
        or not (document["q"] and document["at"])
    ):
        raise InvalidCursorError()
    key: dict[str, Any] = {"quarantine_id": {"S": document["q"]}}
    if reason is not None:
        key["reason"] = {"S": reason.value}
        key["received_at"] = {"S": document["at"]}
    return key
