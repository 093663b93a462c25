"""The attempt log: one `DeliveriesTable` item per delivery, its attempts kept inside it.

Cost shapes this module. A delivery is one (event, subscription) pair; its item holds the status
and the list of attempts (docs/architecture.md), so an attempt costs exactly one `UpdateItem`
that appends to the list with `list_append` and sets the outcome in the same write, and the
deliver function's duplicate check is one `GetItem`. Every write is conditional on the delivery
not being `succeeded` already, so a late failure of a duplicate task never overwrites a recorded
success (a replay, asked for by an operator, is the one exception).

The DynamoDB adapter of the `DeliveryLog` port (`ports`); the records it reads and writes are
the model's (`model`). Response excerpts are stored cut (`DeliveryAttempt.bounded`: 256 bytes
of a 2xx, 1 KiB otherwise), so a first-attempt success stays a one-unit write. A log longer than
`MAX_LOGGED_ATTEMPTS` (only reached by repeated replays) stops growing; `attempt_count` keeps
counting.

The management side reads through `get`, `get_many` (one `BatchGetItem` for the derived ids of
an event's deliveries: an index by event would be written with every attempt, one more write
unit each, to serve a rare operator read) and `newest_by_subscription` (GSI `by_subscription`);
`jobhooks.delivery.history` builds the listings from them and from the first-attempt pages.
DynamoDB's TTL deletes lazily, so `expires_at` is checked here on every read: an expired
delivery is not found and not listed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any, Final

from botocore.exceptions import ClientError

from jobhooks.delivery.exceptions import DeliveryLogBusyError, DeliveryNotFoundError
from jobhooks.delivery.model import DeliveryAttempt, DeliveryRecord, DeliveryStatus
from jobhooks.delivery_task import DeliveryTask
from jobhooks.storage.conditions import is_condition_failure
from jobhooks.storage.pages import DEFAULT_PAGE_SIZE
from jobhooks.storage.reads import batch_get
from jobhooks.storage.times import (
    epoch_seconds,
    format_time,
    from_epoch_seconds,
    parse_time,
    to_stored_precision,
    utc_now,
)
from jobhooks.storage.updates import ItemUpdate

BY_SUBSCRIPTION_INDEX: Final = "by_subscription"
DEFAULT_RETENTION_DAYS: Final = 30
MAX_LOGGED_ATTEMPTS: Final = 100


# -- the store -----------------------------------------------------------------------------------


class AttemptLog:
    """Reads and writes `DeliveriesTable`. `dynamodb` is a boto3 DynamoDB client (low level)."""

    def __init__(
        self,
        table_name: str,
        dynamodb: Any,
        *,
        retention_days: int = DEFAULT_RETENTION_DAYS,
        clock: Callable[[], datetime] = utc_now,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.table_name = table_name
        self._dynamodb = dynamodb
        self._retention = timedelta(days=retention_days)
        self._clock = clock
        self._sleep = sleep

    # -- the deliver side --------------------------------------------------------------------

    def find(self, delivery_id: str) -> DeliveryRecord | None:
        """The delivery (strongly consistent read), or None when none is recorded or it expired."""
        response = self._dynamodb.get_item(
            TableName=self.table_name,
            Key={"delivery_id": {"S": delivery_id}},
            ConsistentRead=True,
        )
        item = response.get("Item")
        if item is None:
            return None
        record = _from_item(item)
        return record if self._is_live(record) else None

    def find_many(self, delivery_ids: Iterable[str]) -> dict[str, DeliveryRecord]:
        """`find` for several deliveries at once (strongly consistent BatchGetItem, 100 keys a
        call): the recorded, unexpired ones, by id. The deliver function reads its batch's
        records with it, one call instead of one each."""
        return self._read_many(delivery_ids, consistent=True)

    def record_attempt(
        self,
        task: DeliveryTask,
        status: DeliveryStatus,
        attempt: DeliveryAttempt | None = None,
        *,
        reason: str | None = None,
        message_id: str | None = None,
        logged_attempts: int = 0,
    ) -> bool:
        """Append `attempt` (if any) and set `status` in one conditional UpdateItem.

        False when the delivery had already succeeded (and `task` is not a replay): nothing was
        written. `logged_attempts` is how many attempts the caller saw in the log; past
        `MAX_LOGGED_ATTEMPTS` the attempt is counted but not appended.
        """
        now = to_stored_precision(self._clock())
        update = ItemUpdate()
        for name in ("event_id", "webhook_id", "subscription_id", "tenant_id", "event_type"):
            update.set(name, {"S": getattr(task, name)})
        update.set("status", {"S": status.value})
        update.set("updated_at", {"S": format_time(now)})
        update.set_if_missing("created_at", {"S": format_time(now)})
        update.set("expires_at", {"N": str(epoch_seconds(now + self._retention))})
        if reason is None:
            update.remove("status_reason")
        else:
            update.set("status_reason", {"S": reason})
        if attempt is not None:
            update.add("attempt_count", {"N": "1"})
            if logged_attempts < MAX_LOGGED_ATTEMPTS:
                update.append("attempts", {"M": _attempt_to_map(attempt.bounded())})
        if status is DeliveryStatus.SUCCEEDED:
            update.set("succeeded_at", {"S": format_time(now)})
            if message_id is not None:
                update.set("succeeded_message_id", {"S": message_id})
        if not task.replay:
            succeeded = update.value("succeeded", {"S": DeliveryStatus.SUCCEEDED.value})
            update.condition(
                f"attribute_not_exists({update.name('delivery_id')}) "
                f"OR {update.name('status')} <> {succeeded}"
            )
        try:
            self._dynamodb.update_item(**update.request(self.table_name, _key(task.delivery_id)))
        except ClientError as error:
            if is_condition_failure(error):
                return False
            raise
        return True

    def append_attempt(self, task: DeliveryTask, attempt: DeliveryAttempt) -> None:
        """Log an attempt without touching the status (a success raced by a duplicate task)."""
        now = to_stored_precision(self._clock())
        update = ItemUpdate()
        update.set("updated_at", {"S": format_time(now)})
        update.add("attempt_count", {"N": "1"})
        update.append("attempts", {"M": _attempt_to_map(attempt.bounded())})
        update.condition(f"attribute_exists({update.name('delivery_id')})")
        try:
            self._dynamodb.update_item(**update.request(self.table_name, _key(task.delivery_id)))
        except ClientError as error:
            if not is_condition_failure(error):
                raise

    # -- the management side -----------------------------------------------------------------

    def get(self, delivery_id: str, *, tenant_id: str | None = None) -> DeliveryRecord:
        """The delivery with its attempts; with `tenant_id`, another tenant's is "not found"."""
        response = self._dynamodb.get_item(
            TableName=self.table_name, Key={"delivery_id": {"S": delivery_id}}
        )
        item = response.get("Item")
        record = _from_item(item) if item is not None else None
        if record is None or not self._is_live(record):
            raise DeliveryNotFoundError(delivery_id)
        if tenant_id is not None and record.tenant_id != tenant_id:
            raise DeliveryNotFoundError(delivery_id)
        return record

    def get_many(self, delivery_ids: Iterable[str]) -> dict[str, DeliveryRecord]:
        """The live deliveries among `delivery_ids`, by id (BatchGetItem, 100 keys a call)."""
        return self._read_many(delivery_ids, consistent=False)

    def newest_by_subscription(
        self,
        subscription_id: str,
        *,
        created_at_most: datetime | None = None,
        batch: int = DEFAULT_PAGE_SIZE,
    ) -> Iterator[DeliveryRecord]:
        """The subscription's live deliveries, newest first by `created_at` (GSI
        `by_subscription`), read `batch` at a time; with `created_at_most`, only those created
        then or before. Deliveries created in the same millisecond come in no given order."""
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": BY_SUBSCRIPTION_INDEX,
            "KeyConditionExpression": "subscription_id = :s",
            "ExpressionAttributeValues": {":s": {"S": subscription_id}},
            "ScanIndexForward": False,
            "Limit": batch,
        }
        if created_at_most is not None:
            request["KeyConditionExpression"] += " AND created_at <= :c"
            request["ExpressionAttributeValues"][":c"] = {"S": format_time(created_at_most)}
        while True:
            response = self._dynamodb.query(**request)
            for item in response.get("Items", []):
                record = _from_item(item)
                if self._is_live(record):
                    yield record
            start_key = response.get("LastEvaluatedKey")
            if not start_key:
                return
            request["ExclusiveStartKey"] = start_key

    # -- recovery (`recovery`) ---------------------------------------------------------------

    def oldest_by_subscription(
        self,
        subscription_id: str,
        since: datetime,
        statuses: Iterable[DeliveryStatus],
        *,
        after: tuple[datetime, str] | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        max_read: int | None = None,
    ) -> tuple[list[DeliveryRecord], tuple[datetime, str] | None]:
        """The subscription's live deliveries in `statuses` created at `since` or later, oldest
        first (GSI `by_subscription`), at most `limit`; and the place to go on from (`after`:
        the last delivery read, its `created_at` and id), None when there is no more.

        The status is a filter, which saves transfer, not read units: at most `max_read`
        deliveries (default 20 times `limit`) are read per call, so a long run of deliveries in
        other statuses ends a call early with a place to go on from."""
        values: dict[str, Any] = {
            ":s": {"S": subscription_id},
            ":since": {"S": format_time(since)},
        }
        wanted = []
        for n, status in enumerate(statuses):
            values[f":st{n}"] = {"S": status.value}
            wanted.append(f":st{n}")
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": BY_SUBSCRIPTION_INDEX,
            "KeyConditionExpression": "subscription_id = :s AND created_at >= :since",
            "FilterExpression": f"#status IN ({', '.join(wanted)})",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": values,
            "ScanIndexForward": True,
        }
        if after is not None:
            request["ExclusiveStartKey"] = {
                "subscription_id": {"S": subscription_id},
                "created_at": {"S": format_time(after[0])},
                "delivery_id": {"S": after[1]},
            }
        budget = max_read if max_read is not None else 20 * limit
        found: list[DeliveryRecord] = []
        while True:
            # Limit bounds what is read before the filter: `found` never passes `limit`.
            request["Limit"] = max(1, min(limit - len(found), budget))
            response = self._dynamodb.query(**request)
            budget -= int(response.get("ScannedCount", request["Limit"]))
            for item in response.get("Items", []):
                record = _from_item(item)
                if self._is_live(record):
                    found.append(record)
            start_key = response.get("LastEvaluatedKey")
            if not start_key:
                return found, None
            place = (parse_time(start_key["created_at"]["S"]), start_key["delivery_id"]["S"])
            if len(found) >= limit or budget <= 0:
                return found, place
            request["ExclusiveStartKey"] = start_key

    def mark_recovering(self, record: DeliveryRecord, reason: str) -> bool:
        """Set the delivery `pending` with `reason` (it was sent again), only if it is still as
        `record` read it (same status, same `updated_at`); False when it changed meanwhile."""
        now = to_stored_precision(self._clock())
        update = ItemUpdate()
        update.set("status", {"S": DeliveryStatus.PENDING.value})
        update.set("status_reason", {"S": reason})
        update.set("updated_at", {"S": format_time(now)})
        seen_status = update.value("seen_status", {"S": record.status.value})
        seen_at = update.value("seen_at", {"S": format_time(record.updated_at)})
        update.condition(
            f"{update.name('status')} = {seen_status} AND {update.name('updated_at')} = {seen_at}"
        )
        try:
            self._dynamodb.update_item(**update.request(self.table_name, _key(record.delivery_id)))
        except ClientError as error:
            if is_condition_failure(error):
                return False
            raise
        return True

    # -- internals ---------------------------------------------------------------------------

    def _is_live(self, record: DeliveryRecord) -> bool:
        return record.expires_at > self._clock()

    def _read_many(
        self, delivery_ids: Iterable[str], *, consistent: bool
    ) -> dict[str, DeliveryRecord]:
        items = batch_get(
            self._dynamodb,
            self.table_name,
            [_key(delivery_id) for delivery_id in sorted(set(delivery_ids))],
            request={"ConsistentRead": True} if consistent else None,
            sleep=self._sleep,
            busy=DeliveryLogBusyError,
        )
        records = (_from_item(item) for item in items)
        return {record.delivery_id: record for record in records if self._is_live(record)}


# -- item codec ----------------------------------------------------------------------------------


def _key(delivery_id: str) -> dict[str, Any]:
    return {"delivery_id": {"S": delivery_id}}


def _attempt_to_map(attempt: DeliveryAttempt) -> dict[str, Any]:
    # Absent rather than null: every byte of the item is billed on every later write.
    attributes: dict[str, Any] = {
        "n": {"N": str(attempt.n)},
        "at": {"S": format_time(attempt.at)},
        "latency_ms": {"N": str(attempt.latency_ms)},
    }
    if attempt.status_code is not None:
        attributes["status_code"] = {"N": str(attempt.status_code)}
    if attempt.error is not None:
        attributes["error"] = {"S": attempt.error}
    if attempt.response:
        attributes["response"] = {"S": attempt.response}
    return attributes


def _attempt_from_map(attributes: dict[str, Any]) -> DeliveryAttempt:
    return DeliveryAttempt(
        n=int(attributes["n"]["N"]),
        at=parse_time(attributes["at"]["S"]),
        status_code=int(attributes["status_code"]["N"]) if "status_code" in attributes else None,
        error=attributes["error"]["S"] if "error" in attributes else None,
        latency_ms=int(attributes.get("latency_ms", {"N": "0"})["N"]),
        response=attributes["response"]["S"] if "response" in attributes else "",
    )


def _optional(item: dict[str, Any], name: str) -> str | None:
    return str(item[name]["S"]) if name in item else None


def _from_item(item: dict[str, Any]) -> DeliveryRecord:
    succeeded_at = _optional(item, "succeeded_at")
    return DeliveryRecord(
        delivery_id=item["delivery_id"]["S"],
        event_id=item["event_id"]["S"],
        webhook_id=item["webhook_id"]["S"],
        subscription_id=item["subscription_id"]["S"],
        tenant_id=item["tenant_id"]["S"],
        event_type=item["event_type"]["S"],
        status=DeliveryStatus(item["status"]["S"]),
        status_reason=_optional(item, "status_reason"),
        attempts=tuple(
            _attempt_from_map(value["M"]) for value in item.get("attempts", {"L": []})["L"]
        ),
        attempt_count=int(item.get("attempt_count", {"N": "0"})["N"]),
        created_at=parse_time(item["created_at"]["S"]),
        updated_at=parse_time(item["updated_at"]["S"]),
        succeeded_at=parse_time(succeeded_at) if succeeded_at else None,
        expires_at=from_epoch_seconds(int(item["expires_at"]["N"])),
        succeeded_message_id=_optional(item, "succeeded_message_id"),
    )
