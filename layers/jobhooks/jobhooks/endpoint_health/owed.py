"""Owed notifications: a state change whose notification could not be sent is kept, not lost.

Every endpoint notification follows one conditional write (the run marked failing, the run
cleared, the subscription disabled, the delivery parked), and only that write's maker notifies:
once per state change. When its enqueue to the delivery queue (or its publish to the operators'
topic) fails, the change is made already and nobody else will notify it, so the notification is
written on the item of the endpoint it is about (`health_owed_<16 hex>`, one attribute each,
keyed by the notification's key) and sent again, with the same key and time (so the same
delivery ids and body: deliver drops a repeat that succeeded), by the next process that reads
that endpoint with it:

- the settle step of any delivery to it (the deliver function or ingest's first attempt), a
  skipped one included (a disabled endpoint's events are kept as `skipped`);
- `recover` of the endpoint (`jobhooks webhooks recover`, the API, the portal).

Once sent it is removed (conditional on it being the one read, so a newer one stays). A delivery
that succeeds costs nothing more: the attribute exists only while a notification is owed.

Pure: the record and its codec; `store.HealthRecords` writes and removes it.
"""

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

ATTRIBUTE_PREFIX: Final = "health_owed_"


class OwedNotification(BaseModel):
    """One notification to send again: what `Notifier.notify` was called with."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    tenant_id: str
    type: str
    data: dict[str, Any]
    about_subscription: str | None
    key: str
    at: datetime
    """When it was first sent: the body's `timestamp`, the same when sent again."""

    @property
    def attribute(self) -> str:
        """Its attribute on the subscription item: one per key, so owing it twice is one."""
        return ATTRIBUTE_PREFIX + hashlib.sha256(self.key.encode("utf-8")).hexdigest()[:16]

    def encoded(self) -> str:
        return json.dumps(
            {
                "tenant_id": self.tenant_id,
                "type": self.type,
                "data": self.data,
                "about_subscription": self.about_subscription,
                "key": self.key,
                "at": self.at.isoformat(),
            },
            separators=(",", ":"),
            ensure_ascii=False,
            default=str,
        )


def decode_owed(text: str) -> OwedNotification:
    document = json.loads(text)
    return OwedNotification(
        tenant_id=document["tenant_id"],
        type=document["type"],
        data=document["data"],
        about_subscription=document.get("about_subscription"),
        key=document["key"],
        at=datetime.fromisoformat(document["at"]),
    )


def owed_from_item(item: Mapping[str, Any]) -> tuple[OwedNotification, ...]:
    """The notifications an item owes, oldest first."""
    owed = [
        decode_owed(value["S"])
        for name, value in item.items()
        if name.startswith(ATTRIBUTE_PREFIX) and "S" in value
    ]
    return tuple(sorted(owed, key=lambda notification: (notification.at, notification.key)))


def owed_attributes(owed: tuple[OwedNotification, ...]) -> dict[str, Any]:
    return {notification.attribute: {"S": notification.encoded()} for notification in owed}
