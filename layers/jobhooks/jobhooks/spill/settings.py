"""The spill function's configuration (docs/architecture.md, "Environment").

The analytics sink's variables are ingest's (`AnalyticsSinkSettings`): the spill function writes
to the same stream with the same pseudonymization key. `JOBHOOKS_SPILL_FIRST_RETRY_SECONDS` and
`JOBHOOKS_SPILL_MAX_RETRY_SECONDS` bound how long a message that failed again stays hidden.
"""

from pydantic import Field, ValidationInfo, field_validator

from jobhooks.analytics.settings import AnalyticsSinkSettings
from jobhooks.spill.drain import DEFAULT_FIRST_RETRY_SECONDS, DEFAULT_MAX_RETRY_SECONDS

# SQS's longest visibility timeout.
_MAX_VISIBILITY_SECONDS = 43_200


class SpillSettings(AnalyticsSinkSettings):
    spill_queue_url: str = Field(min_length=1)
    spill_dlq_url: str = Field(min_length=1)
    first_attempts_table: str = Field(min_length=1)
    attempt_log_days: int = Field(30, ge=1, le=365)
    spill_first_retry_seconds: int = Field(
        DEFAULT_FIRST_RETRY_SECONDS, ge=0, le=_MAX_VISIBILITY_SECONDS
    )
    spill_max_retry_seconds: int = Field(
        DEFAULT_MAX_RETRY_SECONDS, ge=0, le=_MAX_VISIBILITY_SECONDS, validate_default=True
    )

    @field_validator("spill_max_retry_seconds")
    @classmethod
    def _not_below_the_first(cls, value: int, info: ValidationInfo) -> int:
        first = info.data.get("spill_first_retry_seconds")
        if first is not None and value < first:
            raise ValueError("must not be below JOBHOOKS_SPILL_FIRST_RETRY_SECONDS")
        return value
