"""Reading an event's claim (`ClaimsTable`) for what its deliveries need: its batch and fan-out.

Ingest writes claims (`jobhooks.ingest.claims`); the deliver function and the delivery history
only read two things of one: the batch that claimed the event (the sort key of its
first-attempt pages) and the subscriptions it was fanned out to (which delivery ids exist).
This reader lives in the storage kit so that delivery reads claims without importing ingest.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from jobhooks.moved_names import moved_name
from jobhooks.storage.exceptions import ClaimsBusyError
from jobhooks.storage.reads import batch_get
from jobhooks.storage.times import from_epoch_seconds, utc_now

if TYPE_CHECKING:
    from jobhooks.storage.claimed_event import ClaimedEvent

# A completion record's key; no verified ce-id has this form (`fetcher.job.<status>.<job id>`).
BATCH_KEY_PREFIX: Final = "batch#"
# The claim's `state` once it was completed by an update (claims written before batch ids).
DONE_STATE: Final = "done"
# What a delivery needs of a claim (`ClaimedEvent`), and nothing of its payload.
_CLAIM_PROJECTION: Final = {
    "ProjectionExpression": "event_id, tenant_id, batch_id, subscription_ids, matched, "
    "expires_at, #state",
    "ExpressionAttributeNames": {"#state": "state"},  # a DynamoDB reserved word
}


def batch_key(batch_id: str) -> str:
    return f"{BATCH_KEY_PREFIX}{batch_id}"


def is_batch_key(event_id: str) -> bool:
    return event_id.startswith(BATCH_KEY_PREFIX)


class ClaimReader:
    """Reads claims (one strongly consistent GetItem). `dynamodb` is a boto3 client."""

    def __init__(
        self,
        table_name: str,
        dynamodb: Any,
        *,
        clock: Callable[[], datetime] = utc_now,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.table_name = table_name
        self._dynamodb = dynamodb
        self._clock = clock
        self._sleep = sleep

    def get(self, event_id: str) -> ClaimedEvent | None:
        """The event's claim, None when absent or expired (but not yet deleted by TTL)."""
        if is_batch_key(event_id):
            return None
        response = self._dynamodb.get_item(
            TableName=self.table_name,
            Key={"event_id": {"S": event_id}},
            ConsistentRead=True,
            **_CLAIM_PROJECTION,
        )
        item = response.get("Item")
        return self._claimed(item) if item is not None else None

    def get_many(self, event_ids: Iterable[str]) -> dict[str, ClaimedEvent]:
        """`get` for several events (strongly consistent BatchGetItem, 100 keys a call): the
        kept claims, by event id. The deliver function's batch reads its tasks' claims so."""
        request = {"ConsistentRead": True, **_CLAIM_PROJECTION}
        claims = (self._claimed(item) for item in self._batch_get(event_ids, request))
        return {claimed.event_id: claimed for claimed in claims if claimed is not None}

    def _claimed(self, item: dict[str, Any]) -> ClaimedEvent | None:
        expires = item.get("expires_at", {}).get("N")
        if expires is None or from_epoch_seconds(int(expires)) <= self._clock():
            return None
        # Imported by the first claim read: ingest imports this module for its key helpers
        # only (`batch_key`, `payload_of`, ...) and reads no claim through it.
        from jobhooks.storage.claimed_event import ClaimedEvent

        return ClaimedEvent(
            event_id=item["event_id"]["S"],
            tenant_id=item.get("tenant_id", {}).get("S", ""),
            batch_id=item.get("batch_id", {}).get("S"),
            subscription_ids=subscription_ids_of(item),
        )

    def payloads(self, event_ids: Iterable[str]) -> dict[str, str]:
        """The webhook bodies of the events whose claims are kept and hold one, by event id
        (BatchGetItem, 100 keys a call; keys left unprocessed are asked again)."""
        found: dict[str, str] = {}
        request = {"ProjectionExpression": "event_id, payload, expires_at"}
        for item in self._batch_get(event_ids, request):
            expires = item.get("expires_at", {}).get("N")
            payload = payload_of(item)
            if expires and from_epoch_seconds(int(expires)) > self._clock() and payload:
                found[item["event_id"]["S"]] = payload
        return found

    def _batch_get(self, event_ids: Iterable[str], request: dict[str, Any]) -> list[dict[str, Any]]:
        """The claim items of `event_ids` (completion records never) that exist, in no order."""
        unique = sorted({e for e in event_ids if not is_batch_key(e)})
        return batch_get(
            self._dynamodb,
            self.table_name,
            [{"event_id": {"S": event_id}} for event_id in unique],
            request=request,
            sleep=self._sleep,
            busy=ClaimsBusyError,
        )


def payload_of(item: dict[str, Any]) -> str | None:
    """The webhook body a claim item holds (zlib-compressed), None when it holds none."""
    value = item.get("payload")
    if not value:
        return None
    if "B" in value:
        return zlib.decompress(value["B"]).decode("utf-8")
    # Claims completed before the payload was compressed, until the dedup retention ends.
    return str(value["S"]) if "S" in value else None


def subscription_ids_of(item: dict[str, Any]) -> tuple[str, ...] | None:
    """The fanned-out subscription ids of a claim item (`ClaimedEvent.subscription_ids`)."""
    value = item.get("subscription_ids")
    if value and "SS" in value:
        return tuple(sorted(value["SS"]))
    matched = item.get("matched", {}).get("N")
    if matched == "0" and ("batch_id" in item or item.get("state", {}).get("S") == DONE_STATE):
        return ()  # a claim records its fan-out when it is made; an old one when done
    return None


# `ClaimedEvent` on first use: what a claim read returns (`ClaimReader.get`); ingest uses this
# module's key helpers only.
_MOVED: Final = {"ClaimedEvent": "jobhooks.storage.claimed_event"}


def __getattr__(name: str) -> Any:
    return moved_name(__name__, name, _MOVED)
