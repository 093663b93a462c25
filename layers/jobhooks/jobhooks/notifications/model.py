"""A notification: its type, tenant, data, and the webhook body and ids derived from them.

Pure: no AWS client here. The body is the job webhooks' envelope, `{type, timestamp, data}`,
compact JSON; the event id is derived from a key when the caller gives one ("once per state
change": the same change notified again yields the same delivery ids, which the deliver
function deduplicates), random otherwise.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from jobhooks.storage.times import format_timestamp
from jobhooks.subscriptions.model import NOTIFICATION_EVENT_TYPES, EventType

EVENT_ID_PREFIX: Final = "jobhooks."
# The job-health types carry a job_name: a subscription's job filter applies to them too.
JOB_SCOPED_TYPES: Final = frozenset({EventType.JOB_HEALTH_DEGRADED, EventType.JOB_HEALTH_RECOVERED})


@dataclass(frozen=True, slots=True)
class Notification:
    tenant_id: str
    type: EventType
    data: Mapping[str, Any]
    at: datetime
    about_subscription: str | None = None
    key: str | None = field(default=None, repr=False)
    """What makes it the same notification again (e.g. a rule, a job and a state change)."""

    def __post_init__(self) -> None:
        if self.type not in NOTIFICATION_EVENT_TYPES:
            raise ValueError(f"{self.type} is not a notification type")

    @property
    def event_id(self) -> str:
        """`jobhooks.<type>.<32 hex>`: from the key (stable), or random without one."""
        if self.key is None:
            suffix = uuid.uuid4().hex
        else:
            seed = f"{self.tenant_id}\n{self.type.value}\n{self.key}"
            suffix = hashlib.sha256(seed.encode("utf-8")).hexdigest()[:32]
        return f"{EVENT_ID_PREFIX}{self.type.value}.{suffix}"

    @property
    def job_name(self) -> str | None:
        """The job it is about, for the subscriptions' job filters (job-health types only)."""
        if self.type not in JOB_SCOPED_TYPES:
            return None
        job_name = self.data.get("job_name")
        return job_name if isinstance(job_name, str) else None

    def body(self) -> str:
        """The exact JSON text that is signed and POSTed."""
        document = {
            "type": self.type.value,
            "timestamp": format_timestamp(self.at),
            "data": self.data,
        }
        return json.dumps(document, separators=(",", ":"), ensure_ascii=False, default=str)


def parse_notification_type(value: str) -> EventType:
    try:
        kind = EventType(value)
    except ValueError:
        kind = None
    if kind is None or kind not in NOTIFICATION_EVENT_TYPES:
        known = ", ".join(t.value for t in NOTIFICATION_EVENT_TYPES)
        raise ValueError(f"{value!r} is not a notification type; one of {known}")
    return kind
