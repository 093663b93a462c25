"""Deliveries as ingest leaves them, written straight into the `stack` fixture's tables.

`Deliveries` claims events the way ingest does (`ClaimStore.claim_event` with a fan-out plan
whose batch id is `new_batch_id(...)` + `.<n>`, then `complete_batch`), writes the first-attempt
successes of a batch with `FirstAttemptLog.write` and the failures with
`AttemptLog.record_attempt`, all on one clock the test moves. The API, portal and CLI tests read
them back through the management code (`jobhooks.delivery.history`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from jobhooks.delivery.attempt_log import AttemptLog
from jobhooks.delivery.first_attempts import (
    FirstAttempt,
    FirstAttemptLog,
    FirstAttemptPage,
    batch_time,
    new_batch_id,
)
from jobhooks.delivery.history import DeliveryHistory
from jobhooks.delivery.model import DeliveryAttempt, DeliveryStatus
from jobhooks.delivery_task import DeliveryTask, delivery_id_for, delivery_task_for
from jobhooks.inbound.job_events import read_forwarded_message
from jobhooks.inbound.outcome import webhook_payload
from jobhooks.ingest.claim_retention import claim_retention_seconds
from jobhooks.ingest.claims import ClaimStore
from jobhooks.ingest.model import Claim, Duplicate, FanOutPlan
from jobhooks.ingest.settings import IngestSettings
from jobhooks.storage.claim_reader import ClaimReader
from jobhooks.storage.times import to_stored_precision
from jobhooks_tools.local.template import LocalResources
from jobhooks_tools.sample_events import demo_key, make_job_event

DAY = 86_400


class Clock:
    """The one clock of every store here; starts at the real time (signatures must be fresh)."""

    def __init__(self) -> None:
        self.now = to_stored_precision(datetime.now(UTC))

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@dataclass(frozen=True)
class Event:
    """A claimed event: what its deliveries are derived from."""

    event_id: str
    event_type: str
    tenant_id: str
    batch_id: str
    payload: str

    def delivery_id(self, subscription_id: str) -> str:
        return delivery_id_for(self.event_id, subscription_id)

    def task(self, subscription_id: str) -> DeliveryTask:
        return delivery_task_for(
            event_id=self.event_id,
            tenant_id=self.tenant_id,
            event_type=self.event_type,
            payload=self.payload,
            subscription_id=subscription_id,
        )

    @property
    def batch_time(self) -> datetime:
        moment = batch_time(self.batch_id)
        assert moment is not None
        return moment


class Deliveries:
    def __init__(self, stack: LocalResources, clock: Clock | None = None) -> None:
        self.clock = clock or Clock()
        dynamodb = boto3.client("dynamodb")
        self.claims = ClaimStore(
            stack.table_name("ClaimsTable"),
            dynamodb,
            # What ingest and the API use: the template's defaults (7 days, 4 days, 30 days).
            retention_seconds=claim_retention_seconds(
                freshness_window_seconds=7 * DAY, queue_retention_seconds=4 * DAY
            ),
            clock=self.clock,
        )
        self.log = AttemptLog(stack.table_name("DeliveriesTable"), dynamodb, clock=self.clock)
        self.pages = FirstAttemptLog(
            stack.table_name("FirstAttemptsTable"), dynamodb, clock=self.clock
        )
        self.history = DeliveryHistory(
            self.log,
            self.pages,
            ClaimReader(stack.table_name("ClaimsTable"), dynamodb, clock=self.clock),
        )
        self._policy = IngestSettings.from_env().verification_policy(keys=(demo_key(),))

    def claim_batch(
        self,
        events: int,
        subscription_ids: Sequence[str],
        *,
        tenant_id: str = "acme",
        batch_id: str | None = None,
    ) -> list[Event]:
        """`events` new events claimed and completed in one ingest batch, now."""
        batch_id = batch_id or new_batch_id(self.clock.now) + ".0"
        claimed: list[tuple[Claim, FanOutPlan]] = []
        found: list[Event] = []
        for _ in range(events):
            sample = make_job_event(
                demo_key(), tenant_id=tenant_id, timestamp=int(self.clock.now.timestamp())
            )
            event = read_forwarded_message(
                sample.forwarded().to_json(), self._policy, self.clock.now
            )
            plan = FanOutPlan(batch_id, webhook_payload(event), tuple(subscription_ids))
            claim = self.claims.claim_event(event, lease_ms=60_000, plan=plan)
            assert not isinstance(claim, Duplicate)
            claimed.append((claim, plan))
            found.append(Event(event.event_id, event.event_type, tenant_id, batch_id, plan.payload))
        self.claims.complete_batch(batch_id, claimed)
        return found

    def succeed(self, events: Sequence[Event], subscription_id: str, status: int = 200) -> None:
        """The first attempts of `events` to `subscription_id` succeeded: their page(s)."""
        by_batch: dict[tuple[str, str], list[FirstAttempt]] = {}
        for event in events:
            success = FirstAttempt(
                event.event_id, event.event_type, self.clock.now, status, latency_ms=42
            )
            by_batch.setdefault((event.batch_id, event.tenant_id), []).append(success)
        self.pages.write(
            [
                FirstAttemptPage(subscription_id, tenant_id, batch_id, tuple(successes))
                for (batch_id, tenant_id), successes in by_batch.items()
            ]
        )

    def attempt(
        self,
        event: Event,
        subscription_id: str,
        status: int = 500,
        *,
        n: int = 1,
        replay: bool = False,
    ) -> None:
        """An attempt-log record (written, or appended to) now: ingest's failed first attempt,
        a retry, or a replay's attempt."""
        task = event.task(subscription_id)
        if replay:
            task = task.model_copy(update={"replay": True})
        succeeded = 200 <= status < 300
        attempt = DeliveryAttempt(n=n, at=self.clock.now, status_code=status, latency_ms=7)
        written = self.log.record_attempt(
            task, DeliveryStatus.SUCCEEDED if succeeded else DeliveryStatus.PENDING, attempt
        )
        assert written


def delivery_ids(page: Any) -> list[str]:
    return [record.delivery_id for record in page.deliveries]
