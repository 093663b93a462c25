"""What the delivery use case needs from storage, subscriptions, HTTP and metrics, as small
interfaces.

They speak the model's types (`model`), never an adapter's: `attempt_log.AttemptLog`,
`history.FirstAttemptSuccesses`, the subscription store, `http_client.WebhookClient` and
`metrics.PowertoolsDeliveryMetrics`, `queues.DeliveryQueueMessages` and `queues.DeliveryDlq`
implement them; tests may pass in-memory fakes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from jobhooks.delivery.model import (
    DeliveryAttempt,
    DeliveryOutcome,
    DeliveryRecord,
    DeliveryStatus,
    PostResult,
)
from jobhooks.delivery_task import DeliveryTask
from jobhooks.subscriptions.model import Subscription

if TYPE_CHECKING:
    from jobhooks.delivery.parking import ParkingSummary


class DeliveryLog(Protocol):
    """What delivery needs of the attempt log (`AttemptLog` implements it)."""

    def find(self, delivery_id: str) -> DeliveryRecord | None: ...

    def find_many(self, delivery_ids: Iterable[str]) -> dict[str, DeliveryRecord]:
        """`find` for several: the recorded ones, by id."""

    def record_attempt(
        self,
        task: DeliveryTask,
        status: DeliveryStatus,
        attempt: DeliveryAttempt | None = None,
        *,
        reason: str | None = None,
        message_id: str | None = None,
        logged_attempts: int = 0,
    ) -> bool: ...

    def append_attempt(self, task: DeliveryTask, attempt: DeliveryAttempt) -> None: ...


class FirstAttemptRecords(Protocol):
    """What delivery needs of the first-attempt pages (`history.FirstAttemptSuccesses`)."""

    def find(self, event_id: str, subscription_id: str) -> DeliveryRecord | None:
        """The delivery's first attempt, made by ingest, if it succeeded and is kept."""

    def find_many(
        self, deliveries: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], DeliveryRecord]:
        """`find` for several (event, subscription) deliveries: the successes, by that pair."""


class SubscriptionDirectory(Protocol):
    """What delivery needs of the subscription store (`SubscriptionStore` implements it)."""

    def get(self, subscription_id: str, *, tenant_id: str | None = None) -> Subscription: ...

    def signing_secrets(
        self, subscription: Subscription, now: datetime | None = None
    ) -> list[str]: ...

    def disable_once(
        self,
        subscription_id: str,
        reason: str,
        *,
        tenant_id: str | None = None,
        while_failing_since: datetime | None = None,
    ) -> Subscription | None:
        """The disabled subscription when this call disabled it; None when it was already."""


class WebhookPoster(Protocol):
    """What delivery needs of the HTTP client (`WebhookClient` implements it)."""

    def post(
        self, url: str, body: bytes, headers: Mapping[str, str], *, timeout: float | None = None
    ) -> PostResult:
        """One POST within the client's total timeout, or within `timeout` when that is shorter."""


class DeliveryMetrics(Protocol):
    """Called once per batch, on the invoking thread, with every outcome of the batch."""

    def record_outcomes(self, outcomes: Sequence[DeliveryOutcome]) -> None: ...


class QueueMessages(Protocol):
    """The delivery queue as the deliver function consumes it (`queues.DeliveryQueueMessages`)."""

    def hide(self, receipt_handle: str, seconds: int) -> None:
        """Bring the message back after `seconds`; best effort (it comes back anyway)."""

    def hide_many(self, hides: Sequence[tuple[str, int]]) -> None:
        """`hide` each (receipt handle, seconds), in as few calls as the queue takes."""


class DeadLetters(Protocol):
    """The delivery DLQ (`queues.DeliveryDlq`)."""

    def park(self, body: str, summary: ParkingSummary) -> str:
        """Send `body` with why it is parked; the new message's id."""
