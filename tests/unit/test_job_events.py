"""The inbound pipeline: a forwarded message becomes a verified JobEvent or exactly one reason."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from jobhooks.envelope import ForwardedMessage, NonUtf8String, OutOfRangeTimestamp
from jobhooks.job_events import VerificationPolicy, read_forwarded_message, read_job_event
from jobhooks.keys import HmacKey, key_from_hex
from jobhooks.rejection import Reason, RejectedMessageError
from jobhooks.sample_events import SampleEvent, completed_body, demo_key, make_job_event
from jobhooks.verification import header_text

KEY = demo_key()
PREVIOUS = key_from_hex("11" * 32)
T = 1_783_965_852
AT = datetime.fromtimestamp(T + 2, UTC)
POLICY = VerificationPolicy(keys=[KEY])
JOB = "6a5b0f8c-2f1e-4a41-9f0e-3d2c1b0a9e88"


def read(event: SampleEvent, policy: VerificationPolicy = POLICY, at: datetime = AT):  # type: ignore[no-untyped-def]
    return read_job_event(event.forwarded(), policy, at)


def rejection(event: SampleEvent, policy: VerificationPolicy = POLICY, at: datetime = AT) -> Reason:
    with pytest.raises(RejectedMessageError) as rejected:
        read(event, policy, at)
    return rejected.value.reason


def signed(**kwargs) -> SampleEvent:  # type: ignore[no-untyped-def]
    kwargs.setdefault("tenant_id", "acme")
    kwargs.setdefault("job_id", JOB)
    kwargs.setdefault("timestamp", T)
    return make_job_event(KEY, **kwargs)


def test_accepts_a_completed_event_with_wire_header_types() -> None:
    event = read(signed())
    assert (event.event_id, event.tenant_id, event.status) == (
        f"fetcher.job.completed.{JOB}",
        "acme",
        "completed",
    )
    assert event.result is not None and event.result.size_bytes == 184320
    assert event.source == "//lerian.fetcher/worker" and not event.legacy


def test_accepts_a_signature_made_with_the_previous_key_during_rotation() -> None:
    old = make_job_event(PREVIOUS, tenant_id="acme", job_id=JOB, timestamp=T)
    assert rejection(old) is Reason.SIGNATURE_MISMATCH
    event = read(old, VerificationPolicy(keys=[KEY, PREVIOUS]))
    assert event.signature_key == PREVIOUS.fingerprint


def test_normalizes_the_documented_snake_case_body() -> None:
    body = json.dumps(
        {
            "job_id": JOB,
            "metadata": {"source": "s"},
            "status": "completed",
            "result": {"size_bytes": 7, "row_count": 2, "protection": {"applied_by": "x"}},
            "execution_time_ms": 12,
            "completed_at": "2026-07-13T18:04:11.5+02:00",
        }
    ).encode()
    event = read(signed(body=body))
    assert event.job_id == JOB and event.execution_time_ms == 12
    assert event.result is not None and event.result.row_count == 2
    assert event.completed_at == datetime(2026, 7, 13, 16, 4, 11, 500000, UTC)


def test_legacy_v1_4_event_needs_the_legacy_switch() -> None:
    legacy = signed(legacy=True, tenant_id="single-tenant")
    assert legacy.routing_key == "job.completed.payments"
    assert rejection(legacy) is Reason.SIGNATURE_MISMATCH
    event = read(legacy, VerificationPolicy(keys=[KEY], allow_legacy_signatures=True))
    assert event.legacy and event.legacy_signature
    assert event.event_id == f"fetcher.job.completed.{JOB}"
    assert event.tenant_id == "single-tenant"


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda e: e.with_headers(ce_tenantid=b"globex"), Reason.TENANT_MISMATCH),
        (lambda e: e.with_headers(X_Tenant_ID="globex"), Reason.SIGNATURE_MISMATCH),
        (lambda e: e.with_headers(ce_id=b"fetcher.job.completed.other"), Reason.EVENT_MISMATCH),
        (
            lambda e: e.with_headers(ce_id=b"fetcher.job.failed." + JOB.encode()),
            Reason.EVENT_MISMATCH,
        ),
        (lambda e: e.with_headers(ce_id=b"fetcher.job.."), Reason.EVENT_MISMATCH),
        (lambda e: e.with_headers(ce_subject=b"another-job"), Reason.EVENT_MISMATCH),
        (lambda e: e.with_headers(ce_eventtype=b"failed"), Reason.EVENT_MISMATCH),
        (lambda e: e.with_headers(x_message_signature=None), Reason.MISSING_SIGNATURE),
        (lambda e: e.with_headers(t=None), Reason.MISSING_SIGNATURE),
        (lambda e: e.with_headers(signature_version=None), Reason.MISSING_SIGNATURE),
        (lambda e: e.with_headers(signature_version="v2"), Reason.UNSUPPORTED_SIGNATURE_VERSION),
        (lambda e: e.with_headers(t="17e8"), Reason.BAD_TIMESTAMP),
        (
            lambda e: SampleEvent(e.exchange, "job.started", e.headers, e.body),
            Reason.UNSUPPORTED_EVENT,
        ),
        (
            lambda e: SampleEvent(e.exchange, "job.failed", e.headers, e.body),
            Reason.SIGNATURE_MISMATCH,
        ),
        (
            lambda e: SampleEvent("fetcher.dlx", e.routing_key, e.headers, e.body),
            Reason.SIGNATURE_MISMATCH,
        ),
        (
            lambda e: SampleEvent(e.exchange, e.routing_key, e.headers, e.body + b" "),
            Reason.SIGNATURE_MISMATCH,
        ),
    ],
)
def test_rejects_with_exactly_one_reason(mutate, reason: Reason) -> None:  # type: ignore[no-untyped-def]
    assert rejection(mutate(signed())) is reason


def test_rejects_a_signed_body_whose_status_contradicts_the_routing_key() -> None:
    body = completed_body(JOB).replace(b'"status":"completed"', b'"status":"failed"')
    assert rejection(signed(body=body)) is Reason.EVENT_MISMATCH


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1,2]",
        b'{"jobId": 5, "status": "completed"}',
        b'{"jobId": "j", "status": "running"}',
        b'{"jobId": "j", "status": "completed", "metadata": 3}',
    ],
)
def test_rejects_a_signed_but_malformed_body(body: bytes) -> None:
    assert rejection(signed(body=body)) is Reason.MALFORMED_BODY


def test_rejects_ce_tenantid_when_the_producer_signed_no_tenant() -> None:
    # An empty signed tenant must not let an unsigned header choose the tenant.
    event = signed(tenant_id="").with_headers(ce_tenantid=b"acme")
    assert rejection(event) is Reason.TENANT_MISMATCH


def test_a_producer_without_tenant_context_is_single_tenant() -> None:
    event = signed(tenant_id="").with_headers(ce_tenantid=None, X_Tenant_ID=None)
    assert read(event).tenant_id == "single-tenant"


def test_freshness_is_the_bridges_window_not_the_producers() -> None:
    hour_old = read(signed(), at=AT + timedelta(hours=1))
    assert hour_old.event_id.endswith(JOB)
    assert rejection(signed(), at=AT + timedelta(days=8)) is Reason.STALE_TIMESTAMP
    assert rejection(signed(), at=AT - timedelta(seconds=40)) is Reason.FUTURE_TIMESTAMP


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"{",
        b"[]",
        b'{"format": "jobhooks.amqp/2"}',
        b'{"format":"jobhooks.amqp/1","exchange":"x","routing_key":"job.completed","vhost":"/",'
        b'"redelivered":false,"headers":[],"body":"***"}',
    ],
)
def test_malformed_envelopes_are_rejected_not_raised(raw: bytes) -> None:
    with pytest.raises(RejectedMessageError) as rejected:
        read_forwarded_message(raw, POLICY, AT)
    assert rejected.value.reason is Reason.MALFORMED_ENVELOPE


def test_header_values_of_unexpected_types_get_a_verdict() -> None:
    for value in (b"\xff\xfe", 3.5, None, [b"x"], {"a": 1}, True):
        event = signed().with_headers(ce_subject=value) if value is not None else signed()
        message = ForwardedMessage.from_json(event.forwarded().to_json())
        try:
            read_job_event(message, POLICY, AT)
        except RejectedMessageError as rejected:
            assert rejected.reason in set(Reason)


def test_odd_unsigned_headers_of_any_publisher_do_not_spoil_a_valid_event() -> None:
    # A timestamp past year 9999 and a long string that is not UTF-8: both forwarded by the
    # shovel in their own form, neither covered by the signature.
    event = signed().with_headers(
        x_expires_at=OutOfRangeTimestamp(2**63), x_note=NonUtf8String(b"caf\xe9")
    )
    raw = event.forwarded(received_at="2026-07-13T18:04:12.001Z").to_json()

    verified = read_forwarded_message(raw, POLICY, AT)

    assert verified.event_id == f"fetcher.job.completed.{JOB}"


@pytest.mark.parametrize(
    "t",
    [OutOfRangeTimestamp(2**63), datetime.fromtimestamp(T, UTC), NonUtf8String(str(T).encode())],
)
def test_t_must_be_a_base_10_integer_not_a_timestamp_or_non_utf8_string(t: object) -> None:
    message = signed().forwarded()
    headers = {**message.headers, "t": t}
    forwarded = ForwardedMessage.from_json(
        ForwardedMessage(message.exchange, message.routing_key, message.body, headers).to_json()
    )
    with pytest.raises(RejectedMessageError) as rejected:
        read_job_event(forwarded, POLICY, AT)
    assert rejected.value.reason is Reason.BAD_TIMESTAMP


def test_a_long_string_that_is_not_utf8_is_never_text() -> None:
    assert header_text(NonUtf8String(b"caf\xe9")) is None
    # Even when its octets happen to decode: the type says what the publisher sent.
    assert header_text(NonUtf8String(b"abc")) is None
    assert header_text(b"abc") == "abc"


def test_a_key_is_never_shown_in_repr() -> None:
    key = HmacKey(b"k" * 32)
    assert "kkkk" not in repr(key) and key.fingerprint in repr(key)
