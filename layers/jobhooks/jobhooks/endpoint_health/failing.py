"""The `endpoint.failing` rule: `failing_after` failed attempts in a row (a setting, default 5,
`JOBHOOKS_ENDPOINT_FAILING_AFTER`) make an endpoint failing, once per run of failures.

Counted per attempt, whatever the delivery: five deliveries failing once each count as much as
one delivery failing five times. A success ends the run (`recovered`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from jobhooks.endpoint_health.model import EndpointHealth, HealthThresholds
from jobhooks.storage.times import format_timestamp


def becomes_failing(health: EndpointHealth, thresholds: HealthThresholds) -> bool:
    """True when this run of failures has just reached the threshold and was not notified."""
    return not health.failing and health.consecutive_failures >= thresholds.failing_after


def failing_data(
    subscription_id: str, health: EndpointHealth, last_result: str, at: datetime
) -> dict[str, Any]:
    return {
        "subscription_id": subscription_id,
        "consecutive_failures": health.consecutive_failures,
        "failing_since": format_timestamp(health.failing_since or at),
        "last_result": last_result,
    }


def failing_key(subscription_id: str, health: EndpointHealth, at: datetime) -> str:
    """The same run of failures notified again gives the same delivery ids."""
    return f"{subscription_id}.failing.{format_timestamp(health.failing_since or at)}"
