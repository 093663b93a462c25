"""What an event's claim says about its deliveries, as `ClaimReader.get` reads it.

Its own module because only the claim's readers build one (the deliver function and the
delivery history, `jobhooks.storage.claim_reader`); ingest, which imports the reader's module
for its key helpers, does not define it at import.
"""

from __future__ import annotations

from jobhooks.frozen_record import FrozenRecord


class ClaimedEvent(FrozenRecord):
    """What an event's claim says about its deliveries."""

    __slots__ = ("batch_id", "event_id", "subscription_ids", "tenant_id")
    event_id: str
    tenant_id: str
    batch_id: str | None
    """The ingest batch that claimed the event; None for claims made before claims named one."""
    subscription_ids: tuple[str, ...] | None
    """The subscriptions the event was fanned out to, sorted; None when the claim does not say
    (in progress, or completed before claims recorded them)."""

    def __init__(
        self,
        event_id: str,
        tenant_id: str,
        batch_id: str | None,
        subscription_ids: tuple[str, ...] | None,
    ) -> None:
        object.__setattr__(self, "event_id", event_id)
        object.__setattr__(self, "tenant_id", tenant_id)
        object.__setattr__(self, "batch_id", batch_id)
        object.__setattr__(self, "subscription_ids", subscription_ids)
