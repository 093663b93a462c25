"""The sustained-failure rule: an endpoint whose every attempt has failed for
`auto_disable_after` (`AutoDisableAfterHours`, default 120 h, Svix's rule;
`JOBHOOKS_AUTO_DISABLE_AFTER`) is disabled, with reason `sustained_failure`.

Judged on each failed attempt: the run of failures began at `failing_since` and no attempt has
succeeded since (a success clears it). The disable is conditional on that same run, so a success
racing it wins.
"""

from __future__ import annotations

from datetime import datetime

from jobhooks.endpoint_health.model import EndpointHealth, HealthThresholds
from jobhooks.storage.times import format_timestamp

REASON_PREFIX = "every attempt failed"


def is_sustained(health: EndpointHealth, at: datetime, thresholds: HealthThresholds) -> bool:
    after = thresholds.auto_disable_after
    if after is None or health.failing_since is None:
        return False
    return at - health.failing_since >= after


def sustained_reason(health: EndpointHealth, at: datetime) -> str:
    """The subscription's `disabled_reason`: when the failures began, how many there were."""
    since = format_timestamp(health.failing_since) if health.failing_since else "?"
    return (
        f"{REASON_PREFIX} from {since} to {format_timestamp(at)} "
        f"({health.consecutive_failures} attempts)"
    )
