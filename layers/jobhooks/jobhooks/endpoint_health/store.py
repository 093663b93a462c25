"""An endpoint's health on its subscription item: the `health_*` attributes, one UpdateItem each.

Every write is conditional, so among concurrent deliver and ingest invocations exactly one
makes each state change, and only that one notifies:

- `record_failure`: one more failed attempt (ADD), the run's start kept (`if_not_exists`);
  the item as it is afterwards (`record_failure_item`: all of it);
- `mark_failing`: the run reached the threshold and nobody marked it yet;
- `clear_after_success`: a success ends the run; the health it ended, for the one writer whose
  condition held (the others get None);
- `owe` / `sent_owed`: a notification whose sending failed is kept on the item, and removed once
  sent (`owed`).

Each also moves the item's `revision`, so a management write that read the item before (the
store's revision-checked PutItem) reads it again instead of writing back stale health.
`health_from_item` / `health_attributes` are the codec the subscription store uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from botocore.exceptions import ClientError

from jobhooks.endpoint_health.model import HEALTHY, EndpointHealth
from jobhooks.endpoint_health.owed import (
    ATTRIBUTE_PREFIX,
    OwedNotification,
    owed_attributes,
    owed_from_item,
)
from jobhooks.storage.conditions import is_condition_failure
from jobhooks.storage.times import format_time, parse_time
from jobhooks.storage.updates import ItemUpdate

FAILURES: Final = "health_failures"
FAILING_SINCE: Final = "health_failing_since"
FAILING: Final = "health_failing"
_ONE: Final = {"N": "1"}


def health_from_item(item: Mapping[str, Any]) -> EndpointHealth:
    owes = any(name.startswith(ATTRIBUTE_PREFIX) for name in item)
    if FAILURES not in item and FAILING not in item and not owes:
        return HEALTHY
    return EndpointHealth(
        consecutive_failures=int(item[FAILURES]["N"]) if FAILURES in item else 0,
        failing_since=parse_time(item[FAILING_SINCE]["S"]) if FAILING_SINCE in item else None,
        failing=bool(item[FAILING]["BOOL"]) if FAILING in item else False,
        owed=owed_from_item(item) if owes else (),
    )


def health_attributes(health: EndpointHealth) -> dict[str, Any]:
    """The attributes of a whole item written back (none for a clean health)."""
    attributes: dict[str, Any] = {}
    if health.consecutive_failures:
        attributes[FAILURES] = {"N": str(health.consecutive_failures)}
    if health.failing_since is not None:
        attributes[FAILING_SINCE] = {"S": format_time(health.failing_since)}
    if health.failing:
        attributes[FAILING] = {"BOOL": True}
    attributes.update(owed_attributes(health.owed))
    return attributes


class HealthRecords:
    """The `health_*` attributes of the subscriptions table's items (boto3 low-level client)."""

    def __init__(self, table_name: str, dynamodb: Any) -> None:
        self.table_name = table_name
        self._dynamodb = dynamodb

    def record_failure(
        self, subscription_id: str, at: datetime
    ) -> tuple[EndpointHealth, bool] | None:
        """Count one failed attempt; the health after it and whether the subscription is
        active. None when the subscription no longer exists."""
        item = self.record_failure_item(subscription_id, at)
        if item is None:
            return None
        return health_from_item(item), item.get("status", {}).get("S") == "active"

    def record_failure_item(self, subscription_id: str, at: datetime) -> dict[str, Any] | None:
        """`record_failure`, giving the whole item as it is after the write: as fresh as a
        strongly consistent read (the deliver function keeps it in its cache)."""
        update = ItemUpdate().set_if_missing(FAILING_SINCE, {"S": format_time(at)})
        update.add(FAILURES, _ONE).add("revision", _ONE)
        update.condition("attribute_exists(subscription_id)")
        return self._write(subscription_id, update, "ALL_NEW")

    def mark_failing(self, subscription_id: str, failing_after: int) -> bool:
        """Mark the run as notified; True for the one writer that did (it notifies)."""
        update = ItemUpdate().set(FAILING, {"BOOL": True}).add("revision", _ONE)
        failures, failing = update.name(FAILURES), update.name(FAILING)
        update.value("threshold", {"N": str(failing_after)})
        update.value("no", {"BOOL": False})
        update.condition(
            f"{failures} >= :threshold AND (attribute_not_exists({failing}) OR {failing} = :no)"
        )
        return self._write(subscription_id, update, "NONE") is not None

    def clear_after_success(self, subscription_id: str) -> EndpointHealth | None:
        """End the run of failures; the health it had, for the one writer that ended it."""
        update = ItemUpdate().remove(FAILURES).remove(FAILING_SINCE).remove(FAILING)
        update.add("revision", _ONE)
        failures, failing = update.name(FAILURES), update.name(FAILING)
        update.condition(f"attribute_exists({failures}) OR attribute_exists({failing})")
        item = self._write(subscription_id, update, "ALL_OLD")
        return health_from_item(item) if item is not None else None

    def owe(self, subscription_id: str, notification: OwedNotification) -> bool:
        """Keep a notification that could not be sent on its endpoint's item; False when the
        subscription no longer exists (nothing left to tell about it)."""
        update = ItemUpdate().set(notification.attribute, {"S": notification.encoded()})
        update.add("revision", _ONE).condition("attribute_exists(subscription_id)")
        return self._write(subscription_id, update, "NONE") is not None

    def sent_owed(self, subscription_id: str, notification: OwedNotification) -> bool:
        """Remove a notification sent at last; False when it was not the one kept (removed by
        another process that sent it too, or the subscription deleted)."""
        update = ItemUpdate().remove(notification.attribute).add("revision", _ONE)
        kept = update.name(notification.attribute)
        update.value("owed", {"S": notification.encoded()})
        update.condition(f"{kept} = :owed")
        return self._write(subscription_id, update, "NONE") is not None

    def _write(
        self, subscription_id: str, update: ItemUpdate, returned: str
    ) -> dict[str, Any] | None:
        """The item (as `returned` says) when the condition held; None when it did not."""
        request = update.request(self.table_name, {"subscription_id": {"S": subscription_id}})
        request["ReturnValues"] = returned
        try:
            response = self._dynamodb.update_item(**request)
        except ClientError as error:
            if is_condition_failure(error):
                return None
            raise
        return dict(response.get("Attributes") or {})
