"""The Fetcher job event as one model, whatever shape it arrived in.

The producer puts camelCase on the wire (`jobId`, `executionTimeMs`, `sizeBytes`, …); its
documentation shows snake_case; v1.4.x producers send no CloudEvents headers and route on
`job.<status>.<source>`. All three normalize to `JobEvent`.
"""

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, NotRequired

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    TypeAdapter,
    ValidationError,
    with_config,
)
from typing_extensions import TypedDict  # pydantic needs it, not typing's, before Python 3.12

from jobhooks.inbound.rejection import Reason, RejectedMessageError

JobStatus = Literal["completed", "failed"]
STATUSES: tuple[JobStatus, ...] = ("completed", "failed")

# The job id becomes the claim's key (`fetcher.job.<status>.<jobId>`), which DynamoDB caps at
# 2,048 bytes; Fetcher's are UUIDs. 256 characters stay under the cap in any UTF-8.
MAX_JOB_ID_CHARS = 256

_CURRENT_ROUTING_KEYS: dict[str, JobStatus] = {"job.completed": "completed", "job.failed": "failed"}
# v1.4.x: job.<status>.<source>, source lower-cased [a-z0-9_-], at most 64 characters.
_LEGACY_ROUTING_KEY = re.compile(r"job\.(completed|failed)\.([a-z0-9_-]{1,64})")

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|z|[+-]\d{2}:\d{2})"
)
# The producer's own form (`2026-07-13T18:04:11.204Z`): ASCII digits, `T`, an hour below 24, 0, 3
# or 6 fractional digits, `Z`. Exactly the times `_RFC3339` matches that every supported Python's
# fromisoformat reads alike (see parse_rfc3339), in one test without capturing a group.
_PRODUCER_FORM = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-9]{2}:[0-9]{2}(?:\.[0-9]{3}|\.[0-9]{6})?Z"
)


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class ResultIntegrity(_Lenient):
    algorithm: str | None = None
    signature: str | None = None


class ResultProtection(_Lenient):
    encrypted: bool | None = None
    mode: str | None = None
    applied_by: str | None = Field(None, validation_alias=AliasChoices("appliedBy", "applied_by"))


class JobResult(_Lenient):
    """Where the producer stored the (encrypted) result and how to verify it; passed through."""

    path: str | None = None
    size_bytes: StrictInt | None = Field(
        None, validation_alias=AliasChoices("sizeBytes", "size_bytes")
    )
    row_count: StrictInt | None = Field(
        None, validation_alias=AliasChoices("rowCount", "row_count")
    )
    format: str | None = None
    hmac: str | None = None
    integrity: ResultIntegrity | None = None
    protection: ResultProtection | None = None


@with_config(ConfigDict(extra="ignore"))
class JobBody(TypedDict):
    """The JSON body, camelCase (wire) or snake_case (documentation), as validated.

    A TypedDict, not a model: pydantic validates it just the same (`_BODY`), and building a
    model instance from the result cost as much again as the validation, for every message.
    An optional field the body leaves out is a key left out (`metadata` then means `{}`).
    """

    job_id: Annotated[str, Field(validation_alias=AliasChoices("jobId", "job_id"))]
    status: JobStatus
    metadata: NotRequired[dict[str, Any]]
    result: NotRequired[JobResult | None]
    execution_time_ms: NotRequired[
        Annotated[
            StrictInt | None,
            Field(validation_alias=AliasChoices("executionTimeMs", "execution_time_ms")),
        ]
    ]
    completed_at: NotRequired[
        Annotated[str | None, Field(validation_alias=AliasChoices("completedAt", "completed_at"))]
    ]


_BODY = TypeAdapter(JobBody)


@dataclass(slots=True, kw_only=True)
class JobEvent:
    """One verified, cross-checked terminal job event.

    Built once per message, by `read_job_event` only, from values it has just validated. A
    plain slots dataclass because it sits on the ingest function's hot path: validating the
    values again into a pydantic model, or a frozen dataclass (whose `__init__` sets each of
    the twenty fields through `object.__setattr__`), costs about three times as much. Nothing
    changes an event once it is read; treat it as immutable.
    """

    event_id: str
    tenant_id: str
    job_id: str
    status: JobStatus
    exchange: str
    routing_key: str
    vhost: str = "/"
    source: str | None = None
    """`ce-source`: the producer's CloudEvents source, as cross_checks.checked_source allows it."""
    schema_version: str | None = None
    """`ce-schemaversion` when it is a short version string (unsigned, informational)."""
    emitted_at: datetime | None = None
    """`ce-time`: when this copy was emitted (changes on re-emission); None when absent,
    unreadable or outside the freshness bounds of `signed_at` (cross_checks.py)."""
    signed_at: datetime
    """`t`, signed: when the producer's outbox relayed this copy (changes on re-emission)."""
    received_at: datetime
    """The receipt clock (SQS `SentTimestamp`)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    result: JobResult | None = None
    execution_time_ms: int | None = None
    completed_at: datetime | None = None
    error_message: str | None = None
    legacy: bool = False
    """A v1.4.x producer: no CloudEvents headers or a `job.<status>.<source>` routing key."""
    signature_key: str = ""
    """Fingerprint of the key that verified the signature."""
    legacy_signature: bool = False

    @property
    def event_type(self) -> str:
        return f"job.{self.status}"


def routing_status(routing_key: str) -> tuple[JobStatus, bool]:
    """The status a routing key announces, and whether it is the legacy form."""
    if status := _CURRENT_ROUTING_KEYS.get(routing_key):
        return status, False
    if match := _LEGACY_ROUTING_KEY.fullmatch(routing_key):
        return _status(match.group(1)), True
    raise RejectedMessageError(
        Reason.UNSUPPORTED_EVENT,
        f"routing key {routing_key[:80]!r} is neither job.completed, job.failed nor a legacy "
        "job.<status>.<source>",
    )


def _status(text: str) -> JobStatus:
    return "completed" if text == "completed" else "failed"


def parse_body(document: dict[str, Any] | None) -> JobBody:
    """The body (as `parse_json_object` read it) as a `JobBody`, or `malformed_body`."""
    if document is None:
        raise RejectedMessageError(Reason.MALFORMED_BODY, "the body is not a JSON object")
    job_id = document.get("jobId", document.get("job_id"))
    if not isinstance(job_id, str) or not job_id:
        raise RejectedMessageError(
            Reason.MALFORMED_BODY, "the body has no string job id (jobId or job_id)"
        )
    if len(job_id) > MAX_JOB_ID_CHARS:
        raise RejectedMessageError(
            Reason.MALFORMED_BODY,
            f"the body's job id is {len(job_id)} characters long; at most {MAX_JOB_ID_CHARS} "
            "are accepted (Fetcher's are UUIDs)",
        )
    if document.get("status") not in STATUSES:
        raise RejectedMessageError(
            Reason.MALFORMED_BODY,
            f"the body's status {str(document.get('status'))[:40]!r} is neither completed nor "
            "failed",
        )
    try:
        return _BODY.validate_python(document)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise RejectedMessageError(
            Reason.MALFORMED_BODY, f"the body's field {where!r} is invalid: {first['msg']}"
        ) from None


def parse_rfc3339(text: str | None) -> datetime | None:
    """An RFC 3339 time with up to nine fractional digits (Go's format), as aware UTC.

    Parsed by this grammar rather than by `fromisoformat`, whose acceptance of nine fractional
    digits and of lower-case `t`/`z` differs across the Python versions we support. Digits
    beyond microseconds are truncated.
    """
    if not text:
        return None
    text = text.strip()
    # The producer's own form is read by fromisoformat, in C, where int() of each field costs
    # twice the whole call. Hour 24 takes the general path, which rejects it, whatever a newer
    # fromisoformat would make of it.
    if _PRODUCER_FORM.fullmatch(text):
        try:
            return datetime.fromisoformat(text)
        except ValueError:  # a day or a second out of range: the general path says None too
            return None
    match = _RFC3339.fullmatch(text)
    return _from_fields(match) if match else None


def _from_fields(match: re.Match[str]) -> datetime | None:
    """The general path of `parse_rfc3339`, from the fields of a `_RFC3339` match."""
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    micros = int((fraction or "0")[:6].ljust(6, "0"))
    try:
        moment = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), micros, UTC
        )
    except ValueError:
        return None
    if zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        try:
            moment -= sign * timedelta(hours=hours, minutes=minutes)
        except OverflowError:  # 0001-01-01T00:30+01:00 is before datetime's first UTC instant
            return None
    return moment
