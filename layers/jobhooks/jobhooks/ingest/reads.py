"""What the operators' reads and re-fan-outs of ingest return.

Apart from `ingest.model` because the ingest function never builds them: the management API
lists events and re-fans them out. `ingest.model` still exports the names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jobhooks.ingest.model import EventRecord


@dataclass(frozen=True, slots=True)
class EventPage:
    """One page of event records (the management API's list)."""

    events: tuple[EventRecord, ...]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class FanOutResult:
    """What a re-fan-out enqueued (the management API's re-fan-outs and replays)."""

    event_id: str
    deliveries: int
    subscription_ids: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "deliveries": self.deliveries,
            "subscription_ids": list(self.subscription_ids),
        }
