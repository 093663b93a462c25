"""A page of the attempt log, as the management API and the portal list it.

Apart from `model` because the delivery functions, which import the model at every cold start,
never list deliveries. `model` still exports the name.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobhooks.delivery.model import DeliveryRecord


@dataclass(frozen=True)
class DeliveryPage:
    """One page of delivery records, newest first, and the cursor of the next."""

    deliveries: tuple[DeliveryRecord, ...]
    next_cursor: str | None
