"""The outcome customers receive: the eleven fields, their sources, `unmeasured`, the context."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobhooks.inbound.job_events import VerificationPolicy, read_job_event
from jobhooks.inbound.outcome import (
    MAX_METADATA_BYTES,
    _surely_within_budget,
    format_timestamp,
    webhook_payload,
)
from jobhooks.inbound.outcome_models import Outcome, to_webhook, webhook_body
from jobhooks.inbound.sanitize import (
    _CATEGORIES,
    _NOT_FOUND,
    _RULES,
    categorize_error,
    sanitize_error_message,
)
from jobhooks_tools.sample_events import (
    SOURCE,
    SampleEvent,
    completed_body,
    demo_key,
    failed_body,
    make_job_event,
)

SCHEMA = json.loads((Path(__file__).parents[2] / "docs/schema/outcome.v1.json").read_text())
KEY = demo_key()
T = 1_783_965_852
AT = datetime.fromtimestamp(T + 1, UTC)
JOB = "6a5b0f8c-2f1e-4a41-9f0e-3d2c1b0a9e88"


def body_for(release: str | None = "fetcher@2.0.2", **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("tenant_id", "acme")
    kwargs.setdefault("job_id", JOB)
    kwargs.setdefault("timestamp", T)
    policy = VerificationPolicy(keys=[KEY], allow_legacy_signatures=True)
    event = read_job_event(make_job_event(KEY, **kwargs).forwarded(), policy, AT)
    body = webhook_body(event, release=release)
    jsonschema.validate(body, SCHEMA)
    assert json.loads(webhook_payload(event, release=release)) == body
    return body


def test_completed_outcome_fields_and_sources() -> None:
    body = body_for()
    data = body["data"]
    assert body["type"] == "job.completed" and body["timestamp"] == data["timestamp_utc"]
    assert list(data)[:11] == [
        "timestamp_utc",
        "event_id",
        "release",
        "account_id",
        "job_id",
        "job_name",
        "queue_name",
        "attempt_count",
        "queue_wait_ms",
        "duration_ms",
        "status",
    ]
    assert data["timestamp_utc"] == "2026-07-13T18:04:11.204Z"  # completedAt, not t or ce-time
    assert data["event_id"] == f"fetcher.job.completed.{JOB}"
    assert data["account_id"] == "acme" and data["job_name"] == "payments"
    assert data["queue_name"] == "//lerian.fetcher/worker"
    assert (data["attempt_count"], data["duration_ms"], data["status"]) == (1, 8421, "success")
    assert data["unmeasured"] == ["queue_wait_ms"]
    assert data["fetcher"]["result"]["size_bytes"] == 184320
    assert data["fetcher"]["result"]["protection"]["applied_by"] == "adapter"
    assert data["fetcher"]["schema_version"] == "1.0.0"


def test_failed_outcome_uses_ce_time_and_marks_duration_unmeasured() -> None:
    emitted = datetime(2026, 7, 13, 18, 4, 12, 987654, UTC)
    body = body_for(status="failed", emitted_at=emitted)
    data = body["data"]
    assert data["timestamp_utc"] == "2026-07-13T18:04:12.987Z"
    assert (data["status"], data["duration_ms"]) == ("failure", 0)
    assert data["unmeasured"] == ["queue_wait_ms", "duration_ms"]
    assert data["fetcher"]["error"] == {
        "category": "datasource_error",
        "message": "failed to connect to datasource",
    }
    assert "error" not in data["fetcher"]["metadata"] and "result" not in data["fetcher"]


def test_missing_release_and_source_are_unknown_and_unmeasured() -> None:
    body = failed_body(JOB).replace(b'"source":"payments",', b"")
    data = body_for(release=None, status="failed", body=body)["data"]
    assert data["release"] == "unknown" and data["job_name"] == "unknown"
    assert data["unmeasured"] == ["release", "job_name", "queue_wait_ms", "duration_ms"]


def test_unmeasured_follows_the_contracts_field_order() -> None:
    body = failed_body(JOB).replace(b'"source":"payments",', b"")
    data = body_for(
        release=None, legacy=True, tenant_id="single-tenant", status="failed", body=body
    )["data"]
    everything = ["timestamp_utc", "release", "job_name", "queue_wait_ms", "duration_ms"]
    assert data["unmeasured"] == everything
    assert everything == [name for name in Outcome.model_fields if name in everything]


def test_legacy_event_falls_back_to_exchange_and_signed_t() -> None:
    # No ce-time: the signed relay time `t` (18:04:12), not the receipt clock (18:04:13).
    data = body_for(legacy=True, tenant_id="single-tenant", status="failed")["data"]
    assert data["queue_name"] == "fetcher.job.events"
    assert data["timestamp_utc"] == "2026-07-13T18:04:12.000Z"
    assert data["unmeasured"][0] == "timestamp_utc"
    assert "schema_version" not in data["fetcher"]


def outcome_of(event: SampleEvent, policy: VerificationPolicy | None = None) -> dict[str, Any]:
    policy = policy or VerificationPolicy(keys=[KEY])
    body = webhook_body(read_job_event(event.forwarded(), policy, AT), release="fetcher@2.0.2")
    jsonschema.validate(body, SCHEMA)
    return body


@pytest.mark.parametrize("ce_time", [b"2001-01-01T00:00:00Z", b"2099-01-01T00:00:00.000000001Z"])
def test_a_failed_copy_with_a_rewritten_ce_time_is_timed_by_its_signed_t(ce_time: bytes) -> None:
    # ce-time is unsigned: a copy that arrives first with another value verifies and is
    # delivered, but the value it carries never becomes timestamp_utc.
    event = make_job_event(KEY, status="failed", tenant_id="acme", job_id=JOB, timestamp=T)
    body = outcome_of(event.with_headers(ce_time=ce_time))
    assert body["data"]["timestamp_utc"] == body["timestamp"] == "2026-07-13T18:04:12.000Z"
    assert body["data"]["unmeasured"] == ["timestamp_utc", "queue_wait_ms", "duration_ms"]


def test_a_ce_time_within_the_bounds_of_t_is_kept() -> None:
    event = make_job_event(KEY, status="failed", tenant_id="acme", job_id=JOB, timestamp=T)
    body = outcome_of(event.with_headers(ce_time=b"2026-07-13T17:04:12.5Z"))  # an hour of backlog
    assert body["data"]["timestamp_utc"] == "2026-07-13T17:04:12.500Z"
    assert "timestamp_utc" not in body["data"]["unmeasured"]


def test_a_completed_event_is_timed_by_its_signed_completed_at_whatever_ce_time_says() -> None:
    event = make_job_event(KEY, tenant_id="acme", job_id=JOB, timestamp=T)
    data = outcome_of(event.with_headers(ce_time=b"2001-01-01T00:00:00Z"))["data"]
    assert data["timestamp_utc"] == "2026-07-13T18:04:11.204Z"
    assert data["unmeasured"] == ["queue_wait_ms"]


def test_a_hostile_ce_schemaversion_is_left_out() -> None:
    event = make_job_event(KEY, tenant_id="acme", job_id=JOB, timestamp=T)
    hostile = event.with_headers(ce_schemaversion=b"1.0.0 <img src=x onerror=alert(1)>")
    assert "schema_version" not in outcome_of(hostile)["data"]["fetcher"]
    kept = outcome_of(event.with_headers(ce_schemaversion=b"2.0.0"))["data"]["fetcher"]
    assert kept["schema_version"] == "2.0.0"


def test_queue_name_is_an_allowlisted_ce_source_or_the_exchange() -> None:
    event = make_job_event(KEY, tenant_id="acme", job_id=JOB, timestamp=T)
    allowlisted = VerificationPolicy(keys=[KEY], allowed_sources=frozenset({SOURCE}))
    assert outcome_of(event, allowlisted)["data"]["queue_name"] == SOURCE
    stripped = event.with_headers(ce_source=None)
    assert outcome_of(stripped, allowlisted)["data"]["queue_name"] == "fetcher.job.events"
    overlong = event.with_headers(ce_source=b"//" + b"x" * 300)
    assert outcome_of(overlong)["data"]["queue_name"] == "fetcher.job.events"


def test_zero_execution_time_is_a_measured_zero() -> None:
    data = body_for(body=completed_body(JOB, execution_ms=0))["data"]
    assert data["duration_ms"] == 0 and "duration_ms" not in data["unmeasured"]


def test_error_text_is_re_sanitized_and_bounded() -> None:
    leak = (
        "dial tcp 10.0.0.5:5432: connect: refused; open postgres://u:pw@db:5432/x; "
        "Addr: mongo-0:27017, host 192.168.1.9 " + "x" * 2000
    )
    message = body_for(status="failed", body=failed_body(JOB, message=leak))["data"]["fetcher"][
        "error"
    ]["message"]
    for secret in ("10.0.0.5", "pw@db", "mongo-0", "192.168.1.9"):
        assert secret not in message
    assert len(message) <= 512


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ('connection "crm" not found', "connection_not_found"),
        ("failed to connect to datasource", "datasource_error"),
        ("dial tcp [redacted]: i/o timeout", "datasource_error"),
        ("schema mismatch: column amount is text", "schema_mismatch"),
        ("failed to upload result to storage", "storage_write_failed"),
        ("something odd", "unknown"),
        ("", "unknown"),
    ],
)
def test_error_categories(text: str, category: str) -> None:
    assert categorize_error(sanitize_error_message(text)) == category


def test_metadata_is_bounded() -> None:
    big = json.dumps(
        {
            "jobId": JOB,
            "status": "completed",
            "metadata": {"source": "s", "blob": "y" * 10_000, "id": "c-1"},
        }
    ).encode()
    metadata = body_for(body=big)["data"]["fetcher"]["metadata"]
    assert metadata == {"source": "s", "id": "c-1"}


# ------------------------------------------------------------- the payload is the models' JSON

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=10,
)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=150)
@given(
    status=st.sampled_from(["completed", "failed"]),
    metadata=st.dictionaries(st.text(max_size=8), json_values, max_size=5),
    message=st.one_of(st.text(max_size=80), json_values),
    release=st.one_of(st.none(), st.text(max_size=12)),
    ensure_ascii=st.booleans(),
)
def test_the_payload_is_the_validated_models_json_byte_for_byte(  # type: ignore[no-untyped-def]
    status, metadata, message, release, ensure_ascii
) -> None:
    # webhook_payload serializes the outcome's data without building the pydantic models (the
    # hot path); the models validate the same data. Both must give the same bytes.
    document = json.loads(
        completed_body(JOB) if status == "completed" else failed_body(JOB, message="m")
    )
    document["metadata"] = {**metadata, "error": {"message": message}}
    body = json.dumps(document, ensure_ascii=ensure_ascii).encode()
    event = read_job_event(
        make_job_event(
            KEY, status=status, tenant_id="acme", job_id=JOB, timestamp=T, body=body
        ).forwarded(),
        VerificationPolicy(keys=[KEY]),
        AT,
    )
    payload = webhook_payload(event, release=release)
    assert payload == to_webhook(event, release=release).model_dump_json(exclude_none=True)
    assert json.loads(payload) == webhook_body(event, release=release)


def test_a_number_too_large_for_a_float_is_null_in_the_payload_as_in_the_models() -> None:
    body = f'{{"jobId":"{JOB}","status":"completed","metadata":{{"big":1e400}}}}'.encode()
    event = read_job_event(
        make_job_event(KEY, tenant_id="acme", job_id=JOB, timestamp=T, body=body).forwarded(),
        VerificationPolicy(keys=[KEY]),
        AT,
    )
    payload = webhook_payload(event)
    assert '"metadata":{"big":null}' in payload
    assert payload == to_webhook(event).model_dump_json(exclude_none=True)


@pytest.mark.parametrize("char", ["\x01", "\n", "\U0001f600", '"', "é", "a"])
def test_metadata_the_budget_shortcut_lets_through_is_within_the_budget(char: str) -> None:
    # _bounded_metadata skips encoding string-only metadata that cannot exceed the budget. For
    # each way the encoder writes a character (6, 2, 4, 2, 2 and 1 bytes), every length up to
    # past the budget, in the key and in the value:
    for length in range(0, MAX_METADATA_BYTES // 4):
        for metadata in (
            {"k": char * length},
            {char: char * length},
            {char * length: "v"},
            {"a": "b", "c": char * length},
        ):
            if _surely_within_budget(metadata):
                assert len(json.dumps(metadata, ensure_ascii=False).encode()) <= MAX_METADATA_BYTES


def test_the_budget_shortcut_is_exact_for_the_costliest_characters() -> None:
    # A control character is written as 6 bytes (\u0001), the shortcut's worst case: with one
    # entry, only the ", " the shortcut counts after every entry is not written.
    longest = (MAX_METADATA_BYTES - 2 - 8 - 6) // 6
    metadata = {"\x01": "\x01" * longest}
    assert _surely_within_budget(metadata)
    assert len(json.dumps(metadata, ensure_ascii=False).encode()) == MAX_METADATA_BYTES - 2
    assert not _surely_within_budget({"\x01": "\x01" * (longest + 1)})
    kept = body_for(body=_completed_with_metadata(metadata))["data"]["fetcher"]["metadata"]
    assert kept == metadata


def _completed_with_metadata(metadata: dict[str, Any]) -> bytes:
    document = json.loads(completed_body(JOB))
    document["metadata"] = metadata
    return json.dumps(document).encode()


leaky_fragments = st.sampled_from(
    [
        "dial tcp ",
        "read udp6 ",
        "accept unix ",
        "10.0.0.5",
        ":5432",
        ": ",
        "Addr: ",
        "mongo-0:27017",
        "postgres://u:pw@db/x",
        "://",
        ".",
        "1.2.3",
        " ",
        "\n",
        "x",
    ]
)


@given(st.lists(leaky_fragments | st.text(max_size=6), max_size=12).map("".join))
def test_the_redaction_prefilters_never_skip_a_match(text: str) -> None:
    # Each rule's regex runs only on text holding one of its substrings; running every regex
    # unconditionally must give the same result.
    unfiltered = text
    for _, pattern, replacement in _RULES:
        unfiltered = pattern.sub(replacement, unfiltered)
    unfiltered = " ".join(unfiltered.split())
    if len(unfiltered) > 512:
        unfiltered = unfiltered[:511] + "…"
    assert sanitize_error_message(text) == unfiltered


@given(
    moment=st.datetimes(),
    offset_minutes=st.one_of(st.none(), st.integers(min_value=-1439, max_value=1439)),
)
def test_the_webhook_time_is_utc_milliseconds_truncated(
    moment: datetime, offset_minutes: int | None
) -> None:
    # format_timestamp slices isoformat's text: it must be the seven fields spelled out, for a
    # UTC time, another offset (converted) and a naive one (local, as astimezone reads it).
    if offset_minutes is not None:
        moment = moment.replace(
            tzinfo=UTC if offset_minutes == 0 else timezone(timedelta(minutes=offset_minutes))
        )
    try:
        utc = moment.astimezone(UTC)
    except (OverflowError, ValueError):  # before year 1 or after 9999 in UTC: both refuse
        with pytest.raises((OverflowError, ValueError)):
            format_timestamp(moment)
        return
    fields = (utc.year, utc.month, utc.day, utc.hour, utc.minute, utc.second)
    expected = "%04d-%02d-%02dT%02d:%02d:%02d" % fields + f".{utc.microsecond // 1000:03d}Z"  # noqa: UP031
    assert format_timestamp(moment) == expected


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(1, 1, 1, tzinfo=UTC), "0001-01-01T00:00:00.000Z"),
        (datetime(999, 9, 9, 9, 9, 9, 9_999, tzinfo=UTC), "0999-09-09T09:09:09.009Z"),
        (datetime(1000, 10, 10, 10, 10, 10, 10_000, tzinfo=UTC), "1000-10-10T10:10:10.010Z"),
        (datetime(2026, 7, 13, 18, 4, 11, 204_999, tzinfo=UTC), "2026-07-13T18:04:11.204Z"),
        (datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC), "9999-12-31T23:59:59.999Z"),
        (
            datetime(2026, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1))),
            "2025-12-31T23:30:00.000Z",
        ),
    ],
)
def test_the_webhook_time_pads_every_field_at_the_edges_of_its_range(
    moment: datetime, expected: str
) -> None:
    # The fields come from a table of two-digit strings: a year below 1000, a single-digit
    # field and milliseconds below 10 or 100 must still be zero-padded, the last digit kept.
    assert format_timestamp(moment) == expected


category_fragments = st.sampled_from(
    [
        "connection",
        "Connection ",
        "no such connection",
        "unknown connection",
        "missing connection",
        "not found",
        "does not exist",
        "not configured",
        "storage",
        "s3:",
        "schema",
        "column",
        "datasource",
        "timeout",
        "no such host",
        "x",
        " ",
    ]
)


@given(st.lists(category_fragments | st.text(max_size=4), max_size=8).map("".join))
def test_the_category_is_the_first_rule_that_matches(text: str) -> None:
    # Every rule in its order, each marker tested: the category categorize_error must give.
    lowered = text.lower()
    at = lowered.find("connection")
    if not text:
        expected = "unknown"
    elif any(
        phrase in lowered
        for phrase in ("no such connection", "unknown connection", "missing connection")
    ) or (at >= 0 and any(marker in lowered[at:] for marker in _NOT_FOUND)):
        expected = "connection_not_found"
    else:
        expected = next(
            (name for name, markers in _CATEGORIES if any(m in lowered for m in markers)),
            "unknown",
        )
    assert categorize_error(text) == expected
