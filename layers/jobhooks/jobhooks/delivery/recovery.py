"""Recover: send an endpoint's undelivered webhooks again, once it is back (docs/delivery.md).

`jobhooks webhooks recover SUBSCRIPTION_ID --since ISO` and `POST /v1/subscriptions/{id}/recover`
come here (through `jobhooks.management.recovery`, which checks the caller and that the
subscription is active). One call, `Recovery.recover`, handles one page of the backlog:

1. read the subscription's deliveries created at `since` or later that did not succeed
   (`skipped`, `failed`, `parked`, `gone`), oldest first, at most `limit`, from the attempt
   log's `by_subscription` index (`AttemptLog.oldest_by_subscription`);
2. take their webhook bodies from the events' claims (`ClaimReader.payloads`: one BatchGetItem
   per 100 events); a delivery whose event record is no longer kept is `unavailable`;
3. send one task per delivery to the delivery queue, in that order, 10 a call
   (`SendMessageBatch`). A task is the one fan-out made: same delivery id, same `webhook-id`
   (receivers deduplicate on it), no `replay` flag (a delivery that succeeds meanwhile is not
   POSTed again) and a fresh retry schedule;
4. mark each delivery sent `pending` with reason `recovering`, conditional on its record being
   as read in 1: a second run, or one running at the same time, finds nothing left to send.

A delivery is sent before it is marked, so a crash between the two leaves it to be sent again by
the next run (the deliver function acks a second copy of a delivery that succeeded). The answer
says what was sent, per status, and the cursor of the next page, bound to the subscription and
`since`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final, Protocol

from jobhooks.delivery.attempt_log import AttemptLog
from jobhooks.delivery.exceptions import RecoveryIncompleteError
from jobhooks.delivery.model import DeliveryStatus
from jobhooks.delivery_task import DELIVERY_ID_PATTERN, DeliveryTask, delivery_task_for
from jobhooks.queued_task import QueuedTask
from jobhooks.storage.claim_reader import ClaimReader
from jobhooks.storage.cursors import decode_cursor, encode_cursor, shaped, stored_time
from jobhooks.storage.exceptions import InvalidCursorError
from jobhooks.storage.times import format_time, parse_time

RECOVERABLE: Final = (
    DeliveryStatus.SKIPPED,
    DeliveryStatus.FAILED,
    DeliveryStatus.PARKED,
    DeliveryStatus.GONE,
)
RECOVERING_REASON: Final = "recovering"
DEFAULT_RECOVERY_PAGE: Final = 500
MAX_RECOVERY_PAGE: Final = 1000
CURSOR_SCOPE: Final = "for this subscription and since"

_DELIVERY_ID: Final = shaped(DELIVERY_ID_PATTERN)


class TaskQueue(Protocol):
    """The delivery queue (`jobhooks.delivery_queue.DeliveryQueue`): tasks in shared batches."""

    def enqueue_events(
        self, events: Sequence[tuple[str, Sequence[QueuedTask]]]
    ) -> Mapping[str, Exception]: ...


@dataclass(frozen=True)
class RecoveryPage:
    """What one call sent."""

    sent: int
    by_status: dict[str, int] = field(default_factory=dict)
    """Sent deliveries by the status they had: skipped, failed, parked, gone."""
    unavailable: int = 0
    """Deliveries whose webhook body is no longer kept: they cannot be sent again."""
    next_cursor: str | None = None


class Recovery:
    def __init__(self, *, attempt_log: AttemptLog, claims: ClaimReader, queue: TaskQueue) -> None:
        self._log = attempt_log
        self._claims = claims
        self._queue = queue

    def recover(
        self,
        subscription_id: str,
        since: datetime,
        *,
        cursor: str | None = None,
        limit: int = DEFAULT_RECOVERY_PAGE,
    ) -> RecoveryPage:
        """Send one page of the subscription's undelivered deliveries (module docstring).
        Raises `InvalidCursorError` for a cursor of another subscription or `since`, and
        `RecoveryIncompleteError` when the queue refused some tasks (the next run sends them)."""
        after = _place(cursor, subscription_id, since) if cursor else None
        records, place = self._log.oldest_by_subscription(
            subscription_id, since, RECOVERABLE, after=after, limit=limit
        )
        payloads = self._claims.payloads(record.event_id for record in records)
        tasks: list[tuple[DeliveryTask, int]] = []
        unavailable = 0
        for index, record in enumerate(records):
            payload = payloads.get(record.event_id)
            if payload is None:
                unavailable += 1
                continue
            task = delivery_task_for(
                event_id=record.event_id,
                tenant_id=record.tenant_id,
                event_type=record.event_type,
                payload=payload,
                subscription_id=record.subscription_id,
            )
            tasks.append((task, index))
        refused = self._queue.enqueue_events([(task.delivery_id, [task]) for task, _ in tasks])
        by_status: Counter[str] = Counter()
        for task, index in tasks:
            if task.delivery_id in refused:
                continue
            record = records[index]
            by_status[record.status.value] += 1
            # A delivery recorded under a legacy id is sent under today's: its new record is
            # what the deliver function settles, so the old one is left as it was.
            if task.delivery_id == record.delivery_id:
                self._log.mark_recovering(record, RECOVERING_REASON)
        if refused:
            raise RecoveryIncompleteError(len(refused), sum(by_status.values()))
        next_cursor = (
            encode_cursor(
                {
                    "s": subscription_id,
                    "t": format_time(since),
                    "c": format_time(place[0]),
                    "d": place[1],
                }
            )
            if place is not None
            else None
        )
        return RecoveryPage(sum(by_status.values()), dict(by_status), unavailable, next_cursor)


def _place(cursor: str, subscription_id: str, since: datetime) -> tuple[datetime, str]:
    document = decode_cursor(
        cursor,
        bound={"s": subscription_id, "t": format_time(since)},
        fields={"c": stored_time, "d": _DELIVERY_ID},
        scope=CURSOR_SCOPE,
    )
    created_at = parse_time(document["c"])
    if created_at.tzinfo is None:
        raise InvalidCursorError(CURSOR_SCOPE)
    return created_at.astimezone(UTC), document["d"]
