"""What a process that watches endpoints' health needs (`JOBHOOKS_*`; docs/notifications.md).

The deliver and ingest functions (both settle attempts) read it with their own settings.
"""

import re
from datetime import timedelta
from typing import Any, Final

from pydantic import Field, field_validator

from jobhooks.endpoint_health.model import (
    DEFAULT_AUTO_DISABLE_AFTER,
    DEFAULT_FAILING_AFTER,
    HealthThresholds,
)
from jobhooks.notifications.settings import NotificationSettings

_DURATION: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_SECONDS: Final = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration_seconds(text: str) -> float:
    """`120h`, `15s`, `30m`, `5d` or plain seconds; raises ValueError otherwise."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a duration such as 120h, 30m, 15s or 5d")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


class EndpointHealthSettings(NotificationSettings):
    # Failed attempts in a row that make an endpoint `endpoint.failing`.
    endpoint_failing_after: int = Field(DEFAULT_FAILING_AFTER, ge=1, le=1000)
    # Every attempt failing this long disables the endpoint (template: AutoDisableAfterHours,
    # as `<hours>h`); 0: never. `jobhooks dev --auto-disable-after 15s` shortens it.
    auto_disable_after: float = Field(DEFAULT_AUTO_DISABLE_AFTER.total_seconds(), ge=0)

    @field_validator("auto_disable_after", mode="before")
    @classmethod
    def _parse_duration(cls, value: Any) -> Any:
        if isinstance(value, str):
            return parse_duration_seconds(value)
        return value

    def health_thresholds(self) -> HealthThresholds:
        after = self.auto_disable_after
        return HealthThresholds(
            failing_after=self.endpoint_failing_after,
            auto_disable_after=timedelta(seconds=after) if after > 0 else None,
        )
