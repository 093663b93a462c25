"""First-attempt successes, kept by page: one `FirstAttemptsTable` item per (subscription, batch).

Cost shapes this module (docs/cost.md). Ingest makes the first attempt of every delivery itself
(`jobhooks.delivery.first_attempt`), and nearly all of them succeed. A record of its own per
delivery, as the attempt log keeps, costs a write unit for the item and another for its
`by_subscription` index entry: two thirds of the bill. Here the successes of one ingest
invocation for one subscription share one item, keyed by the subscription (the partition, so a
subscription's pages are a `Query`, newest first, with no index) and the invocation's batch id
(the sort key, which starts with the batch's time in milliseconds, so pages sort by time). Ten
events' successes fit in one write unit: the entries are compact JSON, zlib-compressed (event
ids share their `fetcher.job.<status>.` prefix).

What a page does not hold: response excerpts (a 2xx body is rarely what anyone reads; the
attempt log keeps them for every other attempt), and failures (a failed first attempt gets its
attempt-log record, written by ingest, and its retries go through the deliver function).

The delivery ids of the entries are derived (`delivery_id_for`), and an event's claim names its
batch (`batch_id`), so a delivery is found from its id: the id names the event and the
subscription (`parse_delivery_id`), the claim the batch, the page the attempt
(`jobhooks.delivery.history`).
"""

from __future__ import annotations

import json
import secrets
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from jobhooks.delivery.exceptions import DeliveryLogBusyError
from jobhooks.frozen_record import FrozenRecord
from jobhooks.moved_names import moved_name
from jobhooks.storage.reads import batch_get
from jobhooks.storage.times import (
    epoch_millis,
    epoch_seconds,
    from_epoch_seconds,
    to_stored_precision,
    utc_now,
)

if TYPE_CHECKING:
    from jobhooks.delivery.stored_page import StoredPage

DEFAULT_RETENTION_DAYS: Final = 30
# BatchWriteItem takes at most 25 puts; what it leaves unprocessed (throttling) is sent again
# this many times, backing off, before the write fails.
MAX_BATCH_WRITE_ITEMS: Final = 25
BATCH_WRITE_ROUNDS: Final = 6
BATCH_WRITE_BACKOFF_SECONDS: Final = 0.05
# The width of a batch id's time prefix: milliseconds since the epoch, zero-padded, so that
# batch ids (the pages' sort key) sort as text in time order until the year 2286.
_TIME_DIGITS: Final = 13


def new_batch_id(now: datetime) -> str:
    """A new ingest batch id: its time in milliseconds, then randomness (`<ms>-<hex>`)."""
    return f"{epoch_millis(now):0{_TIME_DIGITS}d}-{secrets.token_hex(6)}"


def batch_time(batch_id: str) -> datetime | None:
    """When the batch began, from its id; None for ids made before batch ids carried a time."""
    prefix, _, _ = batch_id.partition("-")
    if len(prefix) != _TIME_DIGITS or not prefix.isdigit():
        return None
    return datetime.fromtimestamp(int(prefix) / 1000, UTC)


class FirstAttempt(FrozenRecord):
    """One delivery's successful first attempt (made by ingest)."""

    __slots__ = ("at", "event_id", "event_type", "latency_ms", "status_code")
    event_id: str
    event_type: str
    at: datetime
    status_code: int
    latency_ms: int

    def __init__(
        self,
        event_id: str,
        event_type: str,
        at: datetime,
        status_code: int,
        latency_ms: int,
    ) -> None:
        object.__setattr__(self, "event_id", event_id)
        object.__setattr__(self, "event_type", event_type)
        object.__setattr__(self, "at", at)
        object.__setattr__(self, "status_code", status_code)
        object.__setattr__(self, "latency_ms", latency_ms)


class FirstAttemptPage(FrozenRecord):
    """The first-attempt successes of one subscription in one ingest batch."""

    __slots__ = ("batch_id", "subscription_id", "successes", "tenant_id")
    subscription_id: str
    tenant_id: str
    batch_id: str
    successes: tuple[FirstAttempt, ...]

    def __init__(
        self,
        subscription_id: str,
        tenant_id: str,
        batch_id: str,
        successes: tuple[FirstAttempt, ...],
    ) -> None:
        object.__setattr__(self, "subscription_id", subscription_id)
        object.__setattr__(self, "tenant_id", tenant_id)
        object.__setattr__(self, "batch_id", batch_id)
        object.__setattr__(self, "successes", successes)

    @property
    def created_at(self) -> datetime:
        """The batch's time: where the page sorts among the subscription's deliveries."""
        moment = batch_time(self.batch_id)
        if moment is None:
            raise ValueError(f"batch id {self.batch_id!r} carries no time")
        return moment

    def find(self, event_id: str) -> FirstAttempt | None:
        return next((s for s in self.successes if s.event_id == event_id), None)


class FirstAttemptLog:
    """Writes and reads `FirstAttemptsTable`. `dynamodb` is a boto3 DynamoDB client (low level).

    Pages are kept `retention_days` after their batch, as the attempt log keeps deliveries.
    """

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

    # -- the ingest side ---------------------------------------------------------------------

    def write(self, pages: Sequence[FirstAttemptPage]) -> None:
        """Put every page (25 a call); raises `DeliveryLogBusyError` if some stay unwritten.

        A page written twice (an ingest retry of the same batch) is the same item: a put
        replaces it, so the write is idempotent.
        """
        requests = [
            {"PutRequest": {"Item": self._to_item(page)}} for page in pages if page.successes
        ]
        for start in range(0, len(requests), MAX_BATCH_WRITE_ITEMS):
            self._batch_write(requests[start : start + MAX_BATCH_WRITE_ITEMS])

    def _batch_write(self, requests: list[dict[str, Any]]) -> None:
        for round_ in range(BATCH_WRITE_ROUNDS):
            if round_:
                self._sleep(BATCH_WRITE_BACKOFF_SECONDS * 2 ** (round_ - 1))
            response = self._dynamodb.batch_write_item(RequestItems={self.table_name: requests})
            # DynamoDB answers 200 with the puts it had no capacity for (botocore does not retry
            # them): they are sent again, after a pause.
            requests = response.get("UnprocessedItems", {}).get(self.table_name, [])
            if not requests:
                return
        raise DeliveryLogBusyError()

    # -- the management side -----------------------------------------------------------------

    def get(self, subscription_id: str, batch_id: str) -> StoredPage | None:
        """The page of (subscription, batch), None when there is none or it expired."""
        response = self._dynamodb.get_item(
            TableName=self.table_name,
            Key={"subscription_id": {"S": subscription_id}, "batch_id": {"S": batch_id}},
        )
        item = response.get("Item")
        if item is None:
            return None
        stored = _from_item(item)
        return stored if stored.expires_at > self._clock() else None

    def get_many(self, pages: Iterable[tuple[str, str]]) -> dict[tuple[str, str], StoredPage]:
        """`get` for several (subscription, batch) pages (BatchGetItem, 100 keys a call): the
        live ones, by their key; raises `DeliveryLogBusyError` if some stay unread."""
        items = batch_get(
            self._dynamodb,
            self.table_name,
            [{"subscription_id": {"S": s}, "batch_id": {"S": b}} for s, b in sorted(set(pages))],
            sleep=self._sleep,
            busy=DeliveryLogBusyError,
        )
        now = self._clock()
        stored = ((item, _from_item(item)) for item in items)
        return {
            (item["subscription_id"]["S"], item["batch_id"]["S"]): page
            for item, page in stored
            if page.expires_at > now
        }

    def newest(
        self, subscription_id: str, *, before_batch: str | None = None, limit: int = 10
    ) -> list[StoredPage]:
        """Up to `limit` live pages of the subscription, newest first, each strictly before
        `before_batch` (a batch id) when given."""
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "subscription_id = :s",
            "ExpressionAttributeValues": {":s": {"S": subscription_id}},
            "ScanIndexForward": False,
        }
        if before_batch is not None:
            request["KeyConditionExpression"] += " AND batch_id < :b"
            request["ExpressionAttributeValues"][":b"] = {"S": before_batch}
        found: list[StoredPage] = []
        now = self._clock()
        while len(found) < limit:
            request["Limit"] = limit - len(found)
            response = self._dynamodb.query(**request)
            found.extend(
                stored
                for stored in map(_from_item, response.get("Items", []))
                if stored.expires_at > now
            )
            start_key = response.get("LastEvaluatedKey")
            if not start_key:
                break
            request["ExclusiveStartKey"] = start_key
        return found[:limit]

    # -- item codec --------------------------------------------------------------------------

    def _to_item(self, page: FirstAttemptPage) -> dict[str, Any]:
        expires = to_stored_precision(page.created_at) + self._retention
        return {
            "subscription_id": {"S": page.subscription_id},
            "batch_id": {"S": page.batch_id},
            "tenant_id": {"S": page.tenant_id},
            "expires_at": {"N": str(epoch_seconds(expires))},
            "successes": {"B": _encode(page.successes)},
        }


def _encode(successes: Sequence[FirstAttempt]) -> bytes:
    rows = [
        [s.event_id, s.event_type, epoch_millis(s.at), s.status_code, s.latency_ms]
        for s in successes
    ]
    text = json.dumps(rows, separators=(",", ":"), ensure_ascii=False)
    return zlib.compress(text.encode("utf-8"), 9)


def _decode(blob: bytes) -> tuple[FirstAttempt, ...]:
    rows = json.loads(zlib.decompress(blob).decode("utf-8"))
    return tuple(
        FirstAttempt(
            event_id=event_id,
            event_type=event_type,
            at=datetime.fromtimestamp(at_ms / 1000, UTC),
            status_code=status_code,
            latency_ms=latency_ms,
        )
        for event_id, event_type, at_ms, status_code, latency_ms in rows
    )


def _from_item(item: dict[str, Any]) -> StoredPage:
    # Imported by the first read: ingest, which imports this module to write pages, reads none.
    from jobhooks.delivery.stored_page import StoredPage

    page = FirstAttemptPage(
        subscription_id=item["subscription_id"]["S"],
        tenant_id=item["tenant_id"]["S"],
        batch_id=item["batch_id"]["S"],
        successes=_decode(item["successes"]["B"]),
    )
    return StoredPage(page, from_epoch_seconds(int(item["expires_at"]["N"])))


# `StoredPage` on first use: a page read back (the deliver function's and the management API's
# reads, `jobhooks.delivery.history`); ingest writes pages and reads none.
_MOVED: Final = {"StoredPage": "jobhooks.delivery.stored_page"}


def __getattr__(name: str) -> Any:
    return moved_name(__name__, name, _MOVED)
