"""A first-attempts page as read back (`jobhooks.delivery.first_attempts`), with its records.

Its own module because only the reads build one (`jobhooks.delivery.history`: the deliver
function and the management API); ingest, which writes the pages, does not define it at import.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from jobhooks.delivery.model import DeliveryAttempt, DeliveryRecord, DeliveryStatus
from jobhooks.delivery_task import delivery_id_for
from jobhooks.frozen_record import FrozenRecord
from jobhooks.webhook_signature import webhook_id_for

if TYPE_CHECKING:
    from jobhooks.delivery.first_attempts import FirstAttempt, FirstAttemptPage


class StoredPage(FrozenRecord):
    """A page as read back, with the time DynamoDB's TTL will delete it."""

    __slots__ = ("expires_at", "page")
    page: FirstAttemptPage
    expires_at: datetime

    def __init__(self, page: FirstAttemptPage, expires_at: datetime) -> None:
        object.__setattr__(self, "page", page)
        object.__setattr__(self, "expires_at", expires_at)

    def records(self) -> tuple[DeliveryRecord, ...]:
        """Each success as the delivery record the attempt log would have held."""
        return tuple(self.record(success) for success in self.page.successes)

    def record(self, success: FirstAttempt) -> DeliveryRecord:
        page = self.page
        attempt = DeliveryAttempt(
            n=1, at=success.at, status_code=success.status_code, latency_ms=success.latency_ms
        )
        return DeliveryRecord(
            delivery_id=delivery_id_for(success.event_id, page.subscription_id),
            event_id=success.event_id,
            webhook_id=webhook_id_for(success.event_id),
            subscription_id=page.subscription_id,
            tenant_id=page.tenant_id,
            event_type=success.event_type,
            status=DeliveryStatus.SUCCEEDED,
            attempts=(attempt,),
            attempt_count=1,
            created_at=page.created_at,
            updated_at=success.at,
            succeeded_at=success.at,
            expires_at=self.expires_at,
        )
