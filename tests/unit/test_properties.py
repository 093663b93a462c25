"""Property-based specifications of the core (hypothesis)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobhooks.inbound.envelope import (
    LAST_DATETIME_SECOND,
    ForwardedMessage,
    NonUtf8String,
    OutOfRangeTimestamp,
)
from jobhooks.inbound.job_events import VerificationPolicy, read_forwarded_message, read_job_event
from jobhooks.inbound.outcome_models import webhook_body
from jobhooks.inbound.rejection import Reason, RejectedMessageError
from jobhooks_tools.sample_events import (
    SampleEvent,
    completed_body,
    demo_key,
    failed_body,
    make_job_event,
)

KEY = demo_key()
T = 1_783_965_852
AT = datetime.fromtimestamp(T + 1, UTC)
POLICY = VerificationPolicy(keys=[KEY])
SCHEMA = json.loads((Path(__file__).parents[2] / "docs/schema/outcome.v1.json").read_text())

scalars = st.one_of(
    st.text(max_size=20),
    st.binary(max_size=20),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.none(),
    st.decimals(allow_nan=False, allow_infinity=False, places=3).map(lambda d: Decimal(str(d))),
    st.datetimes(
        min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
    ).map(lambda d: d.replace(microsecond=0)),
    # What any AMQP publisher can send besides: a timestamp past year 9999, a long string that
    # is not UTF-8 (most random bytes are not).
    st.integers(min_value=LAST_DATETIME_SECOND + 1, max_value=2**64 - 1).map(OutOfRangeTimestamp),
    st.binary(min_size=1, max_size=20).map(NonUtf8String),
)
header_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@given(
    exchange=st.text(max_size=30),
    routing_key=st.text(max_size=30),
    vhost=st.text(max_size=10),
    redelivered=st.booleans(),
    headers=st.dictionaries(st.text(max_size=16), header_values, max_size=8),
    body=st.binary(max_size=256),
)
def test_codec_round_trips_any_typed_header_table_and_body(
    exchange,
    routing_key,
    vhost,
    redelivered,
    headers,
    body,  # type: ignore[no-untyped-def]
) -> None:
    message = ForwardedMessage(
        exchange,
        routing_key,
        body,
        headers,
        vhost,
        redelivered,
        {"content_type": "application/json", "delivery_mode": 2},
        "2026-07-13T18:04:12.001Z",
    )
    decoded = ForwardedMessage.from_json(message.to_json())
    assert decoded == message
    assert types_of(decoded.headers) == types_of(headers)


def types_of(value: object) -> object:
    """The value's shape with every leaf replaced by its exact type (1 vs True vs 1.0, str vs
    bytes vs NonUtf8String, int vs OutOfRangeTimestamp), at every depth."""
    if isinstance(value, dict):
        return {name: types_of(item) for name, item in value.items()}
    if isinstance(value, list):
        return [types_of(item) for item in value]
    return type(value)


@given(st.binary(max_size=512))
def test_verification_of_arbitrary_bytes_returns_a_verdict(raw: bytes) -> None:
    try:
        read_forwarded_message(raw, POLICY, AT)
    except RejectedMessageError as rejected:
        assert rejected.reason in set(Reason)


@given(
    headers=st.dictionaries(
        st.sampled_from(
            [
                "ce-id",
                "ce-subject",
                "ce-tenantid",
                "ce-eventtype",
                "t",
                "x-message-signature",
                "signature-version",
                "X-Tenant-ID",
            ]
        ),
        header_values,
        max_size=6,
    ),
    routing_key=st.sampled_from(["job.completed", "job.failed", "job.failed.x", "job", ""]),
    body=st.one_of(st.binary(max_size=64), st.just(completed_body("j"))),
)
def test_arbitrary_header_values_get_a_verdict(headers, routing_key, body) -> None:  # type: ignore[no-untyped-def]
    message = ForwardedMessage("fetcher.job.events", routing_key, body, headers)
    try:
        read_job_event(message, POLICY, AT)
    except RejectedMessageError as rejected:
        assert rejected.reason in set(Reason)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=60)
@given(
    status=st.sampled_from(["completed", "failed"]),
    tenant=st.text(min_size=1, max_size=30).filter(lambda s: "\n" not in s),
    job_id=st.text(min_size=1, max_size=40),
    source=st.one_of(st.none(), st.text(max_size=20)),
    execution_ms=st.integers(min_value=0, max_value=10**9),
    message=st.text(max_size=300),
)
def test_any_valid_event_normalizes_to_a_schema_valid_outcome(  # type: ignore[no-untyped-def]
    status, tenant, job_id, source, execution_ms, message
) -> None:
    if status == "completed":
        body = completed_body(job_id, source=source or "", execution_ms=execution_ms)
    else:
        body = failed_body(job_id, source=source or "", message=message)
    event = make_job_event(
        KEY, status=status, tenant_id=tenant, job_id=job_id, timestamp=T, body=body
    )
    outcome = webhook_body(read_job_event(event.forwarded(), POLICY, AT), release="fetcher@2.0.2")
    jsonschema.validate(outcome, SCHEMA)
    assert outcome["data"]["account_id"] == tenant and outcome["data"]["job_id"] == job_id


SIGNED = make_job_event(KEY, tenant_id="acme", job_id="6a5b0f8c-2f1e", timestamp=T)


def _flip(text: str, index: int, bit: int) -> str:
    data = bytearray(text.encode())
    data[index % len(data)] ^= 1 << bit
    return data.decode("utf-8", errors="replace")


@given(
    field=st.sampled_from(["body", "tenant", "exchange", "routing_key", "t"]),
    index=st.integers(min_value=0, max_value=10_000),
    bit=st.integers(min_value=0, max_value=7),
)
def test_flipping_any_signed_byte_is_rejected(field: str, index: int, bit: int) -> None:
    event = SIGNED
    if field == "body":
        body = bytearray(event.body)
        body[index % len(body)] ^= 1 << bit
        event = SampleEvent(event.exchange, event.routing_key, event.headers, bytes(body))
    elif field == "tenant":
        event = event.with_headers(X_Tenant_ID=_flip("acme", index, bit))
    elif field == "exchange":
        event = SampleEvent(
            _flip(event.exchange, index, bit), event.routing_key, event.headers, event.body
        )
    elif field == "routing_key":
        event = SampleEvent(
            event.exchange, _flip(event.routing_key, index, bit), event.headers, event.body
        )
    else:
        event = event.with_headers(t=_flip(str(T), index, bit))
    try:
        read_job_event(event.forwarded(), POLICY, AT)
    except RejectedMessageError as rejected:
        assert rejected.reason is not None
    else:
        raise AssertionError(f"a flipped bit in {field} was accepted")


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=80)
@given(
    status=st.sampled_from(["completed", "failed"]),
    unsigned=st.dictionaries(
        st.sampled_from(["ce-source", "ce-time", "ce-schemaversion"]),
        st.one_of(
            header_values,
            st.text(max_size=400).map(str.encode),
            st.datetimes(timezones=st.just(UTC)).map(
                lambda d: d.isoformat().replace("+00:00", "Z").encode()
            ),
        ),
        max_size=3,
    ),
)
def test_unsigned_headers_shape_no_outcome_unchecked(status, unsigned) -> None:  # type: ignore[no-untyped-def]
    """Whatever a copy carries in ce-source, ce-time and ce-schemaversion, the outcome stays
    schema-valid and its time is the signed body's, ce-time within the bounds of `t`, or `t`."""
    event = make_job_event(KEY, status=status, tenant_id="acme", timestamp=T)
    changed = event.with_headers(**unsigned)
    outcome = webhook_body(read_job_event(changed.forwarded(), POLICY, AT), release="r")
    jsonschema.validate(outcome, SCHEMA)
    data = outcome["data"]
    moment = datetime.fromisoformat(data["timestamp_utc"].replace("Z", "+00:00")).timestamp()
    if status == "failed":
        assert T - POLICY.max_age_seconds <= moment <= T + POLICY.max_future_seconds
        if "timestamp_utc" in data["unmeasured"]:
            assert moment == T  # ce-time absent, unreadable or out of bounds: the signed t
    assert len(data["queue_name"]) <= 256
    assert len(data["fetcher"].get("schema_version", "")) <= 32
