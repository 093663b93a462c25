"""The outcome as validated models: the published schema (`docs/schema/outcome.v1.json`), test
sends (`management.subscriptions`), `jobhooks inspect`, and the tests that hold every webhook to
them.

Apart from `outcome`, which maps an event to its outcome as data and serializes the webhook:
no function builds these models to serve a message, so none pays for them at its cold start
(pydantic builds each model's validator when its class is defined, about 5 ms for these four).
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from jobhooks.inbound.event import JobEvent
from jobhooks.inbound.outcome import outcome_data


class OutcomeError(BaseModel):
    model_config = ConfigDict(frozen=True)
    category: str
    message: str


class FetcherContext(BaseModel):
    model_config = ConfigDict(frozen=True)
    metadata: dict[str, Any]
    result: dict[str, Any] | None = None
    error: OutcomeError | None = None
    schema_version: str | None = None


class Outcome(BaseModel):
    """The `data` of a webhook; field order is the contract's."""

    model_config = ConfigDict(frozen=True)

    timestamp_utc: str
    event_id: str
    release: str
    account_id: str
    job_id: str
    job_name: str
    queue_name: str
    attempt_count: int
    queue_wait_ms: int
    duration_ms: int
    status: Literal["success", "failure"]
    unmeasured: list[str]
    fetcher: FetcherContext


def to_outcome(event: JobEvent, *, release: str | None = None) -> Outcome:
    return Outcome.model_validate(outcome_data(event, release=release))


class WebhookBody(BaseModel):
    """The Standard Webhooks envelope `{type, timestamp, data}`."""

    model_config = ConfigDict(frozen=True)

    type: str
    timestamp: str
    data: Outcome


def to_webhook(event: JobEvent, *, release: str | None = None) -> WebhookBody:
    outcome = to_outcome(event, release=release)
    return WebhookBody(type=event.event_type, timestamp=outcome.timestamp_utc, data=outcome)


def webhook_body(event: JobEvent, *, release: str | None = None) -> dict[str, Any]:
    """The webhook body as JSON-ready data."""
    return to_webhook(event, release=release).model_dump(mode="json", exclude_none=True)
