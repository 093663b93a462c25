"""How webhooks are POSTed, retried and recorded: the settings the deliver function and ingest's
first attempts share (docs/architecture.md, "Environment").

A module of their own, so that the ingest function, whose settings include these, does not
define the deliver function's settings model (`jobhooks.delivery.settings.DeliverSettings`).
"""

from typing import Annotated, Any

from pydantic import ConfigDict, Field, field_validator
from pydantic.types import GetPydanticSchema
from pydantic_core import core_schema

from jobhooks.delivery.model import MAX_TOTAL_TIMEOUT_SECONDS
from jobhooks.delivery.retry_schedule import (
    DEFAULT_SCHEDULE,
    InvalidRetryScheduleError,
    RetrySchedule,
)
from jobhooks.settings import Settings

# The field takes a parsed schedule: `_parse_schedule` reads the variable's text, and
# `RetrySchedule` checks itself. Left to pydantic, a dataclass-typed field also gets a validator
# and a serializer for the dataclass's own fields, with pydantic's dataclass support imported to
# build them: about 2 ms of every function's cold start, for inputs no function passes (the
# environment holds text).
_PARSED_SCHEDULE = GetPydanticSchema(
    lambda _source, _handler: core_schema.is_instance_schema(RetrySchedule)
)


class WebhookPostSettings(Settings):
    """How webhooks are POSTed, retried and recorded: the deliver function's settings that
    ingest shares for the first attempts it makes (`jobhooks.delivery.first_attempt`)."""

    model_config = ConfigDict(frozen=True, extra="ignore", arbitrary_types_allowed=True)

    retry_schedule: Annotated[RetrySchedule, _PARSED_SCHEDULE] = DEFAULT_SCHEDULE
    attempt_log_days: int = Field(30, ge=1, le=365)
    delivery_concurrency: int = Field(10, ge=1, le=100)
    # Bounded by the HTTP client's own 15 s ceiling; lower only to shed slow receivers sooner
    # (tests and `jobhooks dev` use a second or two).
    delivery_timeout_seconds: float = Field(MAX_TOTAL_TIMEOUT_SECONDS, gt=0, le=15)
    allow_private_webhooks: bool = False

    @field_validator("retry_schedule", mode="before")
    @classmethod
    def _parse_schedule(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return RetrySchedule.parse(value)
            except InvalidRetryScheduleError as error:
                raise ValueError(str(error)) from None
        return value
