"""A job event as the outcome customers receive (docs/outcome.md, schema v1).

One terminal outcome per logical job: the eleven fields of the background_job_completed
contract with fixed names and types, `unmeasured` naming every field the upstream event could not
supply (so analytics never mistakes a filled-in 0 for a measurement), and a bounded `fetcher`
context block. `docs/schema/outcome.v1.json` publishes the schema; tests hold every emitted body
to it.

Here, the one mapping from event to outcome (`outcome_data`) and the bytes every webhook carries
(`webhook_payload`), both as plain data: the functions read and send outcomes on every message.
The validated models of the same outcome, which the schema, test sends and `jobhooks inspect`
use, are in `outcome_models`, which no function imports to serve a message.
"""

import json
from typing import Any

from pydantic_core import to_json

from jobhooks.inbound.event import JobEvent
from jobhooks.inbound.sanitize import categorize_error, sanitize_error_message
from jobhooks.storage.times import format_timestamp as format_timestamp

SCHEMA_VERSION = 1
UNKNOWN = "unknown"
# The producer runs each job once and stops at its first error; re-emissions of one outcome
# are not attempts.
ATTEMPT_COUNT = 1
# Bounds on the caller's metadata: it is their correlation data, not a payload channel.
MAX_METADATA_BYTES = 4096
MAX_JOB_NAME_CHARS = 128
# The metadata budget is measured in this form (json.dumps' default separators, raw UTF-8).
# One encoder for every event: json.dumps with options builds a new one per call.
# (JSON-parsed data cannot be circular: no need to check.)
_metadata_json = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode


# The outcome as JSON-ready data, in the contract's field order: what `outcome_data` returns and
# `outcome_models.Outcome` validates.
OutcomeData = dict[str, Any]


def outcome_data(event: JobEvent, *, release: str | None = None) -> OutcomeData:
    """The outcome as JSON-ready data: the contract's field order, absent context left out.

    The one mapping from event to outcome: `webhook_payload` serializes it (the ingest function's
    path), the analytics row is built from it, and `outcome_models.to_outcome` validates it into
    the model, so none of them can disagree.
    """
    # In the contract's field order, as each field is decided.
    unmeasured: list[str] = []

    # completedAt is in the signed body; ce-time only counts within the bounds of the signed `t`
    # (cross_checks.py). Without either, `t` itself: when the producer relayed the message, a
    # signed upper bound on when the job ended, but not the moment itself.
    completed = event.status == "completed"
    moment = (event.completed_at if completed else None) or event.emitted_at
    if moment is None:
        moment = event.signed_at
        unmeasured.append("timestamp_utc")

    if not release:
        unmeasured.append("release")
    job_name = event.metadata.get("source")
    if not isinstance(job_name, str) or not job_name:
        job_name = UNKNOWN
        unmeasured.append("job_name")

    # The events carry no enqueue time.
    unmeasured.append("queue_wait_ms")
    if completed:
        duration_ms = event.execution_time_ms or 0  # the producer omits 0: a measured 0 ms
    else:
        duration_ms = 0
        unmeasured.append("duration_ms")

    return {
        "timestamp_utc": format_timestamp(moment),
        "event_id": event.event_id,
        "release": release or UNKNOWN,
        "account_id": event.tenant_id,
        "job_id": event.job_id,
        "job_name": job_name[:MAX_JOB_NAME_CHARS],
        "queue_name": event.source or event.exchange,
        "attempt_count": ATTEMPT_COUNT,
        "queue_wait_ms": 0,
        "duration_ms": duration_ms,
        "status": "success" if completed else "failure",
        "unmeasured": unmeasured,
        "fetcher": _fetcher_context(event),
    }


def webhook_payload(event: JobEvent, *, release: str | None = None) -> str:
    """The exact JSON text (compact, UTF-8) that is signed and POSTed.

    Byte for byte `outcome_models.to_webhook(...).model_dump_json(exclude_none=True)`, without
    building the models: the same serializer (pydantic-core's), on the same data, with the
    models' setting for non-finite floats (`null`).
    """
    return payload_json(event.event_type, outcome_data(event, release=release))


def payload_json(event_type: str, outcome: OutcomeData) -> str:
    """`webhook_payload` of an outcome already mapped by `outcome_data`."""
    body = {"type": event_type, "timestamp": outcome["timestamp_utc"], "data": outcome}
    return to_json(body, inf_nan_mode="null").decode("utf-8")


def _fetcher_context(event: JobEvent) -> dict[str, Any]:
    """`FetcherContext` as data, its unset (None) fields left out as `exclude_none` would."""
    context: dict[str, Any] = {"metadata": _bounded_metadata(event.metadata)}
    if event.status == "completed":
        if event.result is not None:
            context["result"] = event.result  # already as the outcome carries it (event.py)
    else:
        message = sanitize_error_message(event.error_message or "")
        context["error"] = {"category": categorize_error(message), "message": message}
    if event.schema_version is not None:
        context["schema_version"] = event.schema_version
    return context


def _bounded_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """The caller's metadata minus the reserved `error`, cut to a byte budget key by key."""
    whole = {key: value for key, value in metadata.items() if key != "error"}
    if _surely_within_budget(whole) or len(_metadata_json(whole).encode()) <= MAX_METADATA_BYTES:
        return whole
    kept: dict[str, Any] = {}
    used = 2
    for key, value in metadata.items():
        if key == "error":
            continue
        size = len(_metadata_json({key: value}).encode("utf-8"))
        if used + size > MAX_METADATA_BYTES:
            continue
        kept[key] = value
        used += size
    return kept


def _surely_within_budget(metadata: dict[str, Any]) -> bool:
    """Whether metadata of strings only fits the budget whatever its text, without encoding it.

    The encoder writes a character of a string as at most 6 bytes (`\\u001f`; UTF-8 takes at
    most 4), so an entry `"key": "value", ` takes at most 6 * (len(key) + len(value)) + 8 bytes,
    and the braces 2. Correlation ids and a source name are far below that; anything else (a
    number, a nested value) is measured for real.
    """
    worst = 2
    for key, value in metadata.items():
        if type(value) is not str:
            return False
        worst += 6 * (len(key) + len(value)) + 8
    return worst <= MAX_METADATA_BYTES
