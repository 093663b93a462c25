"""A job event as the outcome customers receive (contracts/outcome.md, schema v1).

One terminal outcome per logical job: the eleven fields of the background_job_completed
contract with fixed names and types, `unmeasured` naming every field the upstream event could not
supply (so analytics never mistakes a filled-in 0 for a measurement), and a bounded `fetcher`
context block. `docs/schema/outcome.v1.json` publishes the schema; tests hold every emitted body
to it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from jobhooks.inbound.event import JobEvent
from jobhooks.inbound.sanitize import categorize_error, sanitize_error_message

SCHEMA_VERSION = 1
UNKNOWN = "unknown"
# The producer runs each job once and stops at its first error; re-emissions of one outcome
# are not attempts.
ATTEMPT_COUNT = 1
# Bounds on the caller's metadata: it is their correlation data, not a payload channel.
MAX_METADATA_BYTES = 4096
MAX_JOB_NAME_CHARS = 128


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
    unmeasured: set[str] = set()

    # completedAt is in the signed body; ce-time only counts within the bounds of the signed `t`
    # (cross_checks.py). Without either, `t` itself: when the producer relayed the message, a
    # signed upper bound on when the job ended, but not the moment itself.
    moment = event.completed_at if event.status == "completed" else None
    moment = moment or event.emitted_at
    if moment is None:
        moment = event.signed_at
        unmeasured.add("timestamp_utc")

    if not release:
        unmeasured.add("release")
    job_name = event.metadata.get("source")
    if not isinstance(job_name, str) or not job_name:
        job_name = UNKNOWN
        unmeasured.add("job_name")

    # The events carry no enqueue time.
    unmeasured.add("queue_wait_ms")
    if event.status == "completed":
        duration_ms = event.execution_time_ms or 0  # the producer omits 0: a measured 0 ms
    else:
        duration_ms = 0
        unmeasured.add("duration_ms")

    return Outcome(
        timestamp_utc=format_timestamp(moment),
        event_id=event.event_id,
        release=release or UNKNOWN,
        account_id=event.tenant_id,
        job_id=event.job_id,
        job_name=job_name[:MAX_JOB_NAME_CHARS],
        queue_name=event.source or event.exchange,
        attempt_count=ATTEMPT_COUNT,
        queue_wait_ms=0,
        duration_ms=duration_ms,
        status="success" if event.status == "completed" else "failure",
        unmeasured=[name for name in Outcome.model_fields if name in unmeasured],
        fetcher=_fetcher_context(event),
    )


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


def webhook_payload(event: JobEvent, *, release: str | None = None) -> str:
    """The exact JSON text (compact, UTF-8) that is signed and POSTed."""
    return webhook_json(to_webhook(event, release=release))


def webhook_json(webhook: WebhookBody) -> str:
    """`webhook` as the exact JSON text that is signed and POSTed (`webhook_payload`)."""
    return webhook.model_dump_json(exclude_none=True)


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 UTC with millisecond precision and `Z`."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _fetcher_context(event: JobEvent) -> FetcherContext:
    error = None
    if event.status == "failed":
        message = sanitize_error_message(event.error_message or "")
        error = OutcomeError(category=categorize_error(message), message=message)
    return FetcherContext(
        metadata=_bounded_metadata(event.metadata),
        result=_result(event) if event.status == "completed" else None,
        error=error,
        schema_version=event.schema_version,
    )


def _bounded_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """The caller's metadata minus the reserved `error`, cut to a byte budget key by key."""
    whole = {key: value for key, value in metadata.items() if key != "error"}
    if len(json.dumps(whole, ensure_ascii=False).encode("utf-8")) <= MAX_METADATA_BYTES:
        return whole
    kept: dict[str, Any] = {}
    used = 2
    for key, value in metadata.items():
        if key == "error":
            continue
        size = len(json.dumps({key: value}, ensure_ascii=False).encode("utf-8"))
        if used + size > MAX_METADATA_BYTES:
            continue
        kept[key] = value
        used += size
    return kept


def _result(event: JobEvent) -> dict[str, Any] | None:
    if event.result is None:
        return None
    return event.result.model_dump(exclude_none=True)
