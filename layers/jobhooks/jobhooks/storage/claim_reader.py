"""Reading an event's claim (`ClaimsTable`) for what its deliveries need: its batch and fan-out.

Ingest writes claims (`jobhooks.ingest.claims`); the deliver function and the delivery history
only read two things of one: the batch that claimed the event (the sort key of its
first-attempt pages) and the subscriptions it was fanned out to (which delivery ids exist).
This reader lives in the storage kit so that delivery reads claims without importing ingest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from jobhooks.storage.times import from_epoch_seconds, utc_now

# A completion record's key; no verified ce-id has this form (`fetcher.job.<status>.<job id>`).
BATCH_KEY_PREFIX: Final = "batch#"
# The claim's `state` once it was completed by an update (claims written before batch ids).
DONE_STATE: Final = "done"


def batch_key(batch_id: str) -> str:
    return f"{BATCH_KEY_PREFIX}{batch_id}"


def is_batch_key(event_id: str) -> bool:
    return event_id.startswith(BATCH_KEY_PREFIX)


@dataclass(frozen=True, slots=True)
class ClaimedEvent:
    """What an event's claim says about its deliveries."""

    event_id: str
    tenant_id: str
    batch_id: str | None
    """The ingest batch that claimed the event; None for claims made before claims named one."""
    subscription_ids: tuple[str, ...] | None
    """The subscriptions the event was fanned out to, sorted; None when the claim does not say
    (in progress, or completed before claims recorded them)."""


class ClaimReader:
    """Reads claims (one strongly consistent GetItem). `dynamodb` is a boto3 client."""

    def __init__(
        self, table_name: str, dynamodb: Any, *, clock: Callable[[], datetime] = utc_now
    ) -> None:
        self.table_name = table_name
        self._dynamodb = dynamodb
        self._clock = clock

    def get(self, event_id: str) -> ClaimedEvent | None:
        """The event's claim, None when absent or expired (but not yet deleted by TTL)."""
        if is_batch_key(event_id):
            return None
        response = self._dynamodb.get_item(
            TableName=self.table_name,
            Key={"event_id": {"S": event_id}},
            ConsistentRead=True,
            ProjectionExpression="event_id, tenant_id, batch_id, subscription_ids, matched, "
            "expires_at, #state",
            ExpressionAttributeNames={"#state": "state"},  # a DynamoDB reserved word
        )
        item = response.get("Item")
        if item is None:
            return None
        expires = item.get("expires_at", {}).get("N")
        if expires is None or from_epoch_seconds(int(expires)) <= self._clock():
            return None
        return ClaimedEvent(
            event_id=item["event_id"]["S"],
            tenant_id=item.get("tenant_id", {}).get("S", ""),
            batch_id=item.get("batch_id", {}).get("S"),
            subscription_ids=subscription_ids_of(item),
        )


def subscription_ids_of(item: dict[str, Any]) -> tuple[str, ...] | None:
    """The fanned-out subscription ids of a claim item (`ClaimedEvent.subscription_ids`)."""
    value = item.get("subscription_ids")
    if value and "SS" in value:
        return tuple(sorted(value["SS"]))
    matched = item.get("matched", {}).get("N")
    if matched == "0" and ("batch_id" in item or item.get("state", {}).get("S") == DONE_STATE):
        return ()  # a claim records its fan-out when it is made; an old one when done
    return None
