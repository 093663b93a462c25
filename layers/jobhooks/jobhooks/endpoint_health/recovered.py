"""The `endpoint.recovered` rule: the first success after `endpoint.failing` went out.

A success that ends a run of failures shorter than the threshold resets the count silently
(nobody was told it was failing). A success with nothing to reset writes nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from jobhooks.endpoint_health.model import EndpointHealth
from jobhooks.storage.times import format_timestamp


def recovers(health: EndpointHealth) -> bool:
    return health.failing


def needs_reset(health: EndpointHealth) -> bool:
    """A success must clear the run of failures (the only success that writes)."""
    return not health.is_clean


def recovered_data(subscription_id: str, before: EndpointHealth, at: datetime) -> dict[str, Any]:
    """`before`: the health the success ended (its run of failures)."""
    return {
        "subscription_id": subscription_id,
        "failed_attempts": before.consecutive_failures,
        "failing_since": format_timestamp(before.failing_since) if before.failing_since else None,
        "recovered_at": format_timestamp(at),
    }


def recovered_key(subscription_id: str, before: EndpointHealth) -> str:
    since = format_timestamp(before.failing_since) if before.failing_since else "unknown"
    return f"{subscription_id}.recovered.{since}"
