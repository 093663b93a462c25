"""A job-health alert rule, what the evaluator keeps per job, and the input rules for both.

Pure: no AWS client here. A rule belongs to one tenant and names a glob pattern of job names
(`billing-*`), the thresholds (`failure_rate`, `p95_ms`: at least one), the evidence it needs
(`min_outcomes`) and the window it looks back over. The evaluator keeps, per job name the
pattern matched, whether it is degraded and since when (`states`), and the last few alerts it
sent (`recent`).
"""

import unicodedata
from datetime import datetime, timedelta
from fnmatch import fnmatchcase
from secrets import token_urlsafe
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from jobhooks.alerts.exceptions import (
    InvalidJobNamePatternError,
    InvalidThresholdError,
    InvalidWindowError,
)
from jobhooks.alerts.limits import (
    DEFAULT_MIN_OUTCOMES as DEFAULT_MIN_OUTCOMES,
)
from jobhooks.alerts.limits import (
    DEFAULT_WINDOW as DEFAULT_WINDOW,
)
from jobhooks.alerts.limits import (
    MAX_MIN_OUTCOMES as MAX_MIN_OUTCOMES,
)
from jobhooks.alerts.limits import (
    MAX_P95_MS as MAX_P95_MS,
)
from jobhooks.alerts.limits import (
    MAX_PATTERN_LENGTH as MAX_PATTERN_LENGTH,
)
from jobhooks.alerts.limits import (
    MAX_WINDOW as MAX_WINDOW,
)
from jobhooks.alerts.limits import (
    MIN_WINDOW as MIN_WINDOW,
)

RULE_ID_PREFIX: Final = "alr_"
MAX_RULES_PER_TENANT: Final = 50
# The alerts a rule keeps for the portal's "recent alerts" (newest first).
RECENT_ALERTS: Final = 20


class JobState(BaseModel):
    """A job name a rule found degraded: since when, and the numbers that made it so."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    degraded_since: datetime
    outcomes: int
    failures: int
    failure_rate: float
    p95_duration_ms: int | None = None


class AlertRecord(BaseModel):
    """One alert a rule sent: `job_health.degraded` or `job_health.recovered`."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    type: str
    job_name: str
    at: datetime
    outcomes: int
    failures: int
    failure_rate: float
    p95_duration_ms: int | None = None
    deliveries: int = 0


class AlertRule(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    rule_id: str
    tenant_id: str
    job_name: str
    """A glob pattern (`billing-*`) matched against the outcomes' job_name."""
    failure_rate: float | None = None
    p95_ms: int | None = None
    min_outcomes: int = DEFAULT_MIN_OUTCOMES
    window_seconds: int = int(DEFAULT_WINDOW.total_seconds())
    created_at: datetime
    states: dict[str, JobState] = Field(default_factory=dict)
    """The job names this rule finds degraded now; the others are healthy."""
    recent: tuple[AlertRecord, ...] = ()
    evaluated_at: datetime | None = None
    revision: int = Field(default=0, exclude=True)

    def covers(self, job_name: str) -> bool:
        return fnmatchcase(job_name, self.job_name)

    @property
    def window(self) -> timedelta:
        return timedelta(seconds=self.window_seconds)


def new_rule_id() -> str:
    return RULE_ID_PREFIX + token_urlsafe(12)


def validate_pattern(pattern: str) -> str:
    if not isinstance(pattern, str) or not pattern:
        raise InvalidJobNamePatternError(
            "a rule names the jobs it watches: a job name or a glob pattern such as billing-*"
        )
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise InvalidJobNamePatternError(
            f"the job name pattern is longer than {MAX_PATTERN_LENGTH} characters"
        )
    if any(unicodedata.category(char).startswith("C") for char in pattern):
        raise InvalidJobNamePatternError("the job name pattern contains control characters")
    return pattern


def validate_thresholds(failure_rate: float | None, p95_ms: int | None) -> None:
    if failure_rate is None and p95_ms is None:
        raise InvalidThresholdError(
            "a rule needs a threshold: a failure rate (0 to 1, e.g. 0.2), a p95 duration in "
            "milliseconds, or both"
        )
    if failure_rate is not None and not 0 < failure_rate <= 1:
        raise InvalidThresholdError(
            "the failure rate is a fraction above 0 and at most 1 (0.2 is 20 %); "
            f"got {failure_rate}"
        )
    if p95_ms is not None and not 0 < p95_ms <= MAX_P95_MS:
        error = InvalidThresholdError(
            f"the p95 threshold is milliseconds above 0 and at most {MAX_P95_MS}; got {p95_ms}"
        )
        error.field = "p95_ms"
        raise error


def validate_min_outcomes(min_outcomes: int) -> int:
    if not 1 <= min_outcomes <= MAX_MIN_OUTCOMES:
        error = InvalidThresholdError(
            f"min_outcomes is between 1 and {MAX_MIN_OUTCOMES}; got {min_outcomes}"
        )
        error.field = "min_outcomes"
        raise error
    return min_outcomes


def validate_window(window_seconds: int) -> int:
    if not MIN_WINDOW.total_seconds() <= window_seconds <= MAX_WINDOW.total_seconds():
        raise InvalidWindowError(
            f"the window is between {int(MIN_WINDOW.total_seconds())} seconds and "
            f"{int(MAX_WINDOW.total_seconds())} (one day); got {window_seconds}"
        )
    return window_seconds
