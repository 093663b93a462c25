"""One console line per thing that happened to an event in the local stack.

The functions log structured records (Powertools JSON on AWS); `jobhooks dev` sends those to a
log file and shows, instead, one short line per ingested, duplicate or rejected message and per
delivery attempt, read from the same records' fields. Nothing here changes what the functions
log: this is only another reader of it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

_SEEN: Final = "_jobhooks_activity_seen"


@dataclass(frozen=True)
class Activity:
    """Something that happened to one message, delivery or component."""

    source: str  # ingest | deliver | notify | alerts | shovel | receiver | demo | aws
    what: str  # accepted | duplicate | rejected | delivered | retrying | parked | ...
    text: str
    fields: dict[str, Any]
    at: float

    def line(self) -> str:
        clock = time.strftime("%H:%M:%S", time.localtime(self.at))
        return f"{clock}  {self.source:<8} {self.what:<10} {self.text}"


class ActivityFeed(logging.Handler):
    """A logging handler that turns the functions' and the shovel's records into `Activity`."""

    def __init__(self, sink: Callable[[Activity], None]) -> None:
        super().__init__(logging.DEBUG)
        self._sink = sink
        self._lock_sink = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        # The same record can reach us through several loggers (a logger and its parent).
        if getattr(record, _SEEN, False):
            return
        setattr(record, _SEEN, True)
        try:
            activities = describe_all(record)
        except Exception:  # a record of an unexpected shape must never break a handler
            return
        for activity in activities:
            self.publish(activity)

    def publish(self, activity: Activity) -> None:
        with self._lock_sink:
            self._sink(activity)


def describe_all(record: logging.LogRecord) -> list[Activity]:
    """Every activity a log record reports: one per event of an ingest batch's line."""
    if record.getMessage() == "ingest batch done":
        fields = record.__dict__
        return [
            _activity(record, "ingest", "accepted", f"{_short(event_id)} (fanned out: acked)")
            for event_id in fields.get("accepted_ids") or []
        ] + [
            _activity(
                record, "ingest", "duplicate", f"{_short(event_id)} (already ingested: acked)"
            )
            for event_id in fields.get("duplicate_ids") or []
        ]
    activity = describe(record)
    return [] if activity is None else [activity]


def describe(record: logging.LogRecord) -> Activity | None:
    """The activity a log record reports, or None for records that are not one."""
    fields = record.__dict__
    message = record.getMessage()
    event_id = _short(fields.get("event_id") or fields.get("claimed_event_id") or "")
    if "quarantine_id" in fields and "reason" in fields:
        text = f"{fields['reason']}: {fields.get('detail', '')}"
        if event_id:
            text += f" ({event_id})"
        return _activity(record, "ingest", "rejected", text)
    if "attempt" in fields and "delivery_id" in fields:
        status = fields.get("status_code")
        outcome = f"HTTP {status}" if status is not None else str(fields.get("error") or "error")
        what = "delivered" if status is not None and 200 <= int(status) < 300 else "failed"
        # Ingest makes the first attempt of every delivery (docs/delivery.md); deliver the rest.
        source = "ingest" if record.name.startswith("jobhooks.ingest") else "deliver"
        text = (
            f"{event_id} -> {fields.get('subscription_id', '')} {outcome} in "
            f"{fields.get('latency_ms', '?')} ms (attempt {fields['attempt']})"
        )
        return _activity(record, source, what, text)
    if "delivery_id" in fields and record.levelno >= logging.WARNING:
        what = "parked" if "parked" in message else "dropped" if "dropped" in message else "warning"
        return _activity(
            record, "deliver", what, f"{event_id} -> {fields.get('subscription_id', '')}: {message}"
        )
    if message == "notification sent":
        # What an operator's SNS subscription would receive, as one line (docs/notifications.md).
        deliveries = fields.get("deliveries", 0)
        text = (
            f"{fields.get('tenant_id', '')}: {deliveries} "
            f"deliver{'y' if deliveries == 1 else 'ies'}"
            + (
                f" (about {fields['about_subscription_id']})"
                if fields.get("about_subscription_id")
                else ""
            )
            + (", operators' topic" if fields.get("published") else "")
        )
        return _activity(record, "notify", str(fields.get("notification_type", "")), text)
    # Logger names, not module paths: the tools log under the `jobhooks` logger (dev_stack
    # attaches the console feed there), e.g. `jobhooks.local.aws_limits.guard`, `jobhooks.shovel`.
    if record.name.startswith(("jobhooks.local.aws_limits", "jobhooks.local.iam")):
        # A request real AWS would refuse (moto took it): a bug to fix, shown as it happens.
        # The IAM guard's says `IngestFunction may not dynamodb:GetItem on arn:...`.
        return _activity(record, "aws", "refused", message)
    if record.name.startswith("jobhooks.shovel") and record.levelno >= logging.WARNING:
        details = getattr(record, "fields", None) or {}
        extra = " ".join(f"{key}={value}" for key, value in details.items())
        return _activity(record, "shovel", record.levelname.lower(), f"{message} {extra}".strip())
    return None


def _activity(record: logging.LogRecord, source: str, what: str, text: str) -> Activity:
    return Activity(source, what, text, dict(record.__dict__), record.created)


def _short(event_id: str) -> str:
    """`fetcher.job.completed.0197a3f2-…` shortened to what a person scans for."""
    prefix = "fetcher.job."
    if event_id.startswith(prefix):
        status, _, job = event_id[len(prefix) :].partition(".")
        return f"{status}.{job[:8]}"
    return event_id
