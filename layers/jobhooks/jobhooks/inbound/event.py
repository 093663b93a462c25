"""The Fetcher job event as one model, whatever shape it arrived in.

The producer puts camelCase on the wire (`jobId`, `executionTimeMs`, `sizeBytes`, …); its
documentation shows snake_case; v1.4.x producers send no CloudEvents headers and route on
`job.<status>.<source>`. All three normalize to `JobEvent`.
"""

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, NotRequired, TypedDict

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


class JobBody(TypedDict):
    """The JSON body, camelCase (wire) or snake_case (documentation), as `parse_body` read it.

    An optional field the body leaves out is a key left out (`metadata` then means `{}`).
    """

    job_id: str
    status: JobStatus
    metadata: NotRequired[dict[str, Any]]
    result: NotRequired[dict[str, Any] | None]
    """`JobResult`, as the outcome carries it (see `_job_result`)."""
    execution_time_ms: NotRequired[int | None]
    completed_at: NotRequired[str | None]


# The body's `result` ("JobResult"): where the producer stored the (encrypted) result and how to
# verify it, passed through to the outcome. Each field: its name in the outcome, the keys that
# carry it in the body (the first one present wins, even when it holds null), and its type.
_INTEGRITY_FIELDS: tuple[tuple[str, tuple[str, ...], Any], ...] = (
    ("algorithm", ("algorithm",), str),
    ("signature", ("signature",), str),
)
_PROTECTION_FIELDS: tuple[tuple[str, tuple[str, ...], Any], ...] = (
    ("encrypted", ("encrypted",), bool),
    ("mode", ("mode",), str),
    ("applied_by", ("appliedBy", "applied_by"), str),
)
_RESULT_FIELDS: tuple[tuple[str, tuple[str, ...], Any], ...] = (
    ("path", ("path",), str),
    ("size_bytes", ("sizeBytes", "size_bytes"), int),
    ("row_count", ("rowCount", "row_count"), int),
    ("format", ("format",), str),
    ("hmac", ("hmac",), str),
    ("integrity", ("integrity",), ("ResultIntegrity", _INTEGRITY_FIELDS)),
    ("protection", ("protection",), ("ResultProtection", _PROTECTION_FIELDS)),
)
_RESULT = ("JobResult", _RESULT_FIELDS)

# The rejection's wording for each rule: pydantic's, whose rules these are (the body was
# validated by pydantic models until their cost per message and at import was measured).
_NOT_A_STRING = "Input should be a valid string"
_NOT_AN_INTEGER = "Input should be a valid integer"
_NOT_A_BOOLEAN = "Input should be a valid boolean"
_UNREADABLE_BOOLEAN = "Input should be a valid boolean, unable to interpret input"
_TRUE_WORDS = frozenset(("1", "on", "t", "true", "y", "yes"))
_FALSE_WORDS = frozenset(("0", "off", "f", "false", "n", "no"))
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_ABSENT = object()


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
    signed_timestamp: int
    """`t`, signed, in seconds: when the producer's outbox relayed this copy (changes on
    re-emission). `signed_at` is the same as a datetime."""
    received_at: datetime
    """The receipt clock (SQS `SentTimestamp`)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    """The body's `result` as the outcome carries it: snake_case, null fields left out."""
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

    @property
    def signed_at(self) -> datetime:
        """`signed_timestamp` as an aware UTC time, built when asked for: only an outcome without
        a usable ce-time is timed by it (cross_checks.signed_timestamp checked its range)."""
        return datetime.fromtimestamp(self.signed_timestamp, UTC)


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
    """The body (as `parse_json_object` read it: JSON data) as a `JobBody`, or `malformed_body`
    naming the first field that breaks a rule."""
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
    body: JobBody = {"job_id": job_id, "status": document["status"]}
    # The optional fields in their documented order: a rejection names the first bad one.
    if "metadata" in document:
        metadata = document["metadata"]
        if not isinstance(metadata, dict):
            raise _invalid("metadata", "Input should be a valid dictionary")
        body["metadata"] = metadata
    if "result" in document:
        result = document["result"]
        body["result"] = None if result is None else _job_result(result, "result", _RESULT)
    key = "executionTimeMs" if "executionTimeMs" in document else "execution_time_ms"
    if key in document:
        execution_time_ms = document[key]
        if execution_time_ms is not None and type(execution_time_ms) is not int:
            raise _invalid(key, _NOT_AN_INTEGER)  # an exact int: JSON's true is no duration
        body["execution_time_ms"] = execution_time_ms
    key = "completedAt" if "completedAt" in document else "completed_at"
    if key in document:
        completed_at = document[key]
        if completed_at is not None and type(completed_at) is not str:
            raise _invalid(key, _NOT_A_STRING)
        body["completed_at"] = completed_at
    return body


def _invalid(where: str, rule: str) -> RejectedMessageError:
    return RejectedMessageError(
        Reason.MALFORMED_BODY, f"the body's field {where!r} is invalid: {rule}"
    )


def _job_result(value: Any, where: str, model: tuple[str, Any]) -> dict[str, Any]:
    """An object of `_RESULT` (or one nested in it) as the outcome carries it: its known fields
    in their order, null ones left out, unknown keys dropped; `where` is its place in the body."""
    name, fields = model
    if not isinstance(value, dict):
        raise _invalid(where, f"Input should be a valid dictionary or instance of {name}")
    checked: dict[str, Any] = {}
    for field_name, keys, kind in fields:
        for key in keys:
            item = value.get(key, _ABSENT)
            if item is _ABSENT:
                continue
            if item is None:
                pass  # left out, as model_dump(exclude_none=True) left it out
            elif type(item) is kind:  # nearly every value: a str, an exact int, a bool
                checked[field_name] = item
            elif type(kind) is tuple:
                checked[field_name] = _job_result(item, f"{where}.{key}", kind)
            elif kind is bool:
                checked[field_name] = _lenient_bool(item, f"{where}.{key}")
            else:
                raise _invalid(f"{where}.{key}", _NOT_A_STRING if kind is str else _NOT_AN_INTEGER)
            break
    return checked


def _lenient_bool(value: Any, where: str) -> bool:
    """A JSON value as pydantic's lax boolean reads it: true/false, 0/1 (as an integer or a
    whole float) and the words of `_TRUE_WORDS`/`_FALSE_WORDS` in any case."""
    if type(value) is bool:
        return value
    if type(value) is str:
        word = value.lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
        raise _invalid(where, _UNREADABLE_BOOLEAN)
    # A number: 0 and 1 are booleans; another whole number within 64 bits (a float strictly
    # inside them) is one that cannot be read as a boolean; anything else (a fraction, a huge or
    # non-finite number) is no boolean at all.
    if type(value) is int:
        if value == 0 or value == 1:
            return value == 1
        if _INT64_MIN <= value <= _INT64_MAX:
            raise _invalid(where, _UNREADABLE_BOOLEAN)
    elif type(value) is float and math.isfinite(value) and value.is_integer():
        if value == 0 or value == 1:
            return value == 1
        if _INT64_MIN < value < -_INT64_MIN:
            raise _invalid(where, _UNREADABLE_BOOLEAN)
    raise _invalid(where, _NOT_A_BOOLEAN)


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
