"""Quarantine (`QuarantineTable`): every rejected message, kept with its reason and replayable.

A rejected message is acknowledged only after it was written here, so nothing invalid is retried
forever and nothing is dropped unseen (README, guarantee 3). The id is derived from the SQS
message id and its SentTimestamp, so a retry of the same delivery (say the write succeeded but
the acknowledgement did not) finds its record instead of adding a second one, while a replay,
which gets a new receipt time, gets a new record.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

from jobhooks.inbound.rejection import Reason, RejectedMessageError
from jobhooks.ingest.exceptions import (
    QuarantinedMessageNotFoundError,
    QuarantineTooLargeError,
)
from jobhooks.ingest.inbound import InboundMessage, claimed_event_id
from jobhooks.ingest.model import QUARANTINE_ID_PATTERN
from jobhooks.storage.conditions import is_condition_failure
from jobhooks.storage.cursors import decode_cursor, encode_cursor, shaped, stored_time
from jobhooks.storage.exceptions import AwsServiceError
from jobhooks.storage.pages import DEFAULT_PAGE_SIZE, check_page_size, cut_page
from jobhooks.storage.times import (
    epoch_seconds,
    format_time,
    from_epoch_seconds,
    parse_time,
    utc_now,
)
from jobhooks.storage.updates import ItemUpdate

if TYPE_CHECKING:
    from jobhooks.ingest.quarantined import QuarantinedMessage, QuarantinePage

BY_REASON_INDEX: Final = "by_reason"
# A DynamoDB item holds at most 400 KB, attribute names included; SQS bodies go up to 1 MiB.
MAX_STORED_MESSAGE_BYTES: Final = 350_000
MAX_DETAIL_CHARS: Final = 1_000
_QUARANTINE_ID: Final = shaped(QUARANTINE_ID_PATTERN)


def quarantine_id_for(message_id: str, sent_at: datetime) -> str:
    seed = f"{message_id}\n{int(sent_at.timestamp() * 1000)}"
    return "q_" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:32]


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
        # Here, not at import: the function builds this store at every cold start, and only a
        # rejected message (or the management API) needs the records' classes.
        from jobhooks.ingest.quarantined import QuarantinedMessage

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
            expires_at=from_epoch_seconds(epoch_seconds(now) + self._retention_seconds),
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
        from jobhooks.ingest.quarantined import QuarantinePage

        check_page_size(limit)
        start_key = _start_key(cursor, reason) if cursor else None
        now = self._clock()
        found: list[QuarantinedMessage] = []
        while len(found) <= limit:
            request: dict[str, Any] = {
                "TableName": self.table_name,
                "FilterExpression": "expires_at > :now",
                "ExpressionAttributeValues": {":now": {"N": str(epoch_seconds(now))}},
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
        page, next_cursor = cut_page(found, limit, lambda last: _cursor_after(last, reason))
        return QuarantinePage(page, next_cursor)

    def mark_replayed(
        self, quarantine_id: str, *, outcome: str, replayed_as: str | None = None
    ) -> None:
        from jobhooks.ingest.quarantined import QuarantineStatus

        now = self._clock()
        update = (
            ItemUpdate()
            .set("status", {"S": QuarantineStatus.REPLAYED.value})
            .set("replayed_at", {"S": format_time(now)})
            .set("replay_outcome", {"S": outcome})
        )
        if replayed_as:
            update.set("replayed_as", {"S": replayed_as})
        update.condition(f"attribute_exists({update.name('quarantine_id')})")
        try:
            self._dynamodb.update_item(
                **update.request(self.table_name, {"quarantine_id": {"S": quarantine_id}})
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
        "sent_at": {"S": format_time(record.sent_at)},
        "received_at": {"S": format_time(record.received_at)},
        "status": {"S": record.status.value},
        "expires_at": {"N": str(epoch_seconds(record.expires_at))},
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
    from jobhooks.ingest.quarantined import QuarantinedMessage, QuarantineStatus

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
        sent_at=parse_time(item["sent_at"]["S"]),
        received_at=parse_time(item["received_at"]["S"]),
        expires_at=from_epoch_seconds(int(item["expires_at"]["N"])),
        status=QuarantineStatus(text("status") or QuarantineStatus.QUARANTINED.value),
        event_id=text("event_id"),
        message_bytes=int(item.get("message_bytes", {}).get("N", "0")),
        message_truncated=bool(item.get("message_truncated", {}).get("BOOL", False)),
        replay_of=text("replay_of"),
        replayed_at=parse_time(replayed_at) if replayed_at else None,
        replay_outcome=text("replay_outcome"),
        replayed_as=text("replayed_as"),
    )


def _bounded(detail: str) -> str:
    return detail if len(detail) <= MAX_DETAIL_CHARS else detail[: MAX_DETAIL_CHARS - 1] + "…"


def _cursor_after(record: QuarantinedMessage, reason: Reason | None) -> str:
    return encode_cursor(
        {
            "q": record.quarantine_id,
            "r": reason.value if reason else None,
            "at": format_time(record.received_at),
        }
    )


def _start_key(cursor: str, reason: Reason | None) -> dict[str, Any]:
    document = decode_cursor(
        cursor,
        bound={"r": reason.value if reason else None},
        fields={"q": _QUARANTINE_ID, "at": stored_time},
    )
    key: dict[str, Any] = {"quarantine_id": {"S": document["q"]}}
    if reason is not None:
        key["reason"] = {"S": reason.value}
        key["received_at"] = {"S": document["at"]}
    return key
