"""The inbound pipeline: a forwarded message becomes a verified JobEvent or exactly one reason."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobhooks.inbound.envelope import (
    ForwardedMessage,
    HeaderValue,
    NonUtf8String,
    OutOfRangeTimestamp,
    header_text,
)
from jobhooks.inbound.event import (
    _RFC3339,
    MAX_JOB_ID_CHARS,
    JobStatus,
    _from_fields,
    parse_body,
    parse_rfc3339,
)
from jobhooks.inbound.job_events import VerificationPolicy, read_forwarded_message, read_job_event
from jobhooks.inbound.keys import HmacKey, key_from_hex
from jobhooks.inbound.outcome import webhook_payload
from jobhooks.inbound.rejection import Reason, RejectedMessageError
from jobhooks_tools.sample_events import SampleEvent, completed_body, demo_key, make_job_event
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, StrictInt, ValidationError

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
    assert event.result is not None and event.result["size_bytes"] == 184320
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
    assert event.result == {"size_bytes": 7, "row_count": 2, "protection": {"applied_by": "x"}}
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


def test_rejects_a_job_id_too_long_to_be_a_dedup_key() -> None:
    # The claim's key is `fetcher.job.<status>.<jobId>`; DynamoDB refuses a partition key over
    # 2,048 bytes, which would fail the record until it reached the ingest DLQ.
    longest = "j" * MAX_JOB_ID_CHARS
    assert read(signed(job_id=longest)).job_id == longest
    assert rejection(signed(job_id=longest + "j")) is Reason.MALFORMED_BODY
    assert rejection(signed(body=completed_body(""))) is Reason.MALFORMED_BODY


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
def test_t_must_be_a_base_10_integer_not_a_timestamp_or_non_utf8_string(t: HeaderValue) -> None:
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


# -------------------------------------------------------------------- legacy signatures and tenancy

LEGACY_POLICY = VerificationPolicy(keys=[KEY], allow_legacy_signatures=True)


@pytest.mark.parametrize(
    "claim",
    [
        {"X_Tenant_ID": "other"},
        {"ce_tenantid": b"other"},
        {"X_Tenant_ID": "other", "ce_tenantid": b"other"},
        {"X_Tenant_ID": "single-tenant", "ce_tenantid": b"other"},
        {"X_Tenant_ID": b"other"},
        {"X_Tenant_ID": 7},
    ],
)
def test_a_legacy_signature_never_carries_an_unsigned_tenant(claim: dict[str, object]) -> None:
    # The body-only form signs `<t>.<body>`: anyone may add a tenant header to a legacy copy.
    event = signed(legacy=True).with_headers(**claim)
    with pytest.raises(RejectedMessageError) as rejected:
        read(event, LEGACY_POLICY)
    assert rejected.value.reason is Reason.TENANT_MISMATCH
    assert "legacy" in rejected.value.detail and "does not sign the tenant" in rejected.value.detail


@pytest.mark.parametrize(
    "claim",
    [
        {},
        {"X_Tenant_ID": "single-tenant"},
        {"X_Tenant_ID": "single-tenant", "ce_tenantid": b"single-tenant"},
        {"X_Tenant_ID": "", "ce_tenantid": b""},
    ],
)
def test_a_legacy_signature_is_single_tenant(claim: dict[str, object]) -> None:
    event = read(signed(legacy=True).with_headers(**claim), LEGACY_POLICY)
    assert event.legacy_signature and event.tenant_id == "single-tenant"


def test_a_canonical_signature_still_attributes_its_signed_tenant_with_legacy_on() -> None:
    assert read(signed(tenant_id="acme"), LEGACY_POLICY).tenant_id == "acme"
    assert read(signed(tenant_id="acme"), LEGACY_POLICY).legacy_signature is False
    assert rejection(signed().with_headers(ce_tenantid=b"globex"), LEGACY_POLICY) is (
        Reason.TENANT_MISMATCH
    )


# -------------------------------------------------------------------- ce-source allowlist

SOURCE = "//lerian.fetcher/worker"
ALLOWLISTED = VerificationPolicy(keys=[KEY], allowed_sources=frozenset({SOURCE, "//b/worker"}))


def test_a_ce_source_outside_the_allowlist_is_an_untrusted_source() -> None:
    for value in (b"//mallory/worker", b"", SOURCE.upper().encode(), 5, SOURCE + " "):
        event = signed().with_headers(ce_source=value)
        with pytest.raises(RejectedMessageError) as rejected:
            read(event, ALLOWLISTED)
        assert rejected.value.reason is Reason.UNTRUSTED_SOURCE, value
        assert "JOBHOOKS_ALLOWED_SOURCES" in rejected.value.detail


def test_a_ce_source_inside_the_allowlist_is_accepted() -> None:
    assert read(signed(), ALLOWLISTED).source == SOURCE
    assert read(signed().with_headers(ce_source=b"//b/worker"), ALLOWLISTED).source == "//b/worker"


def test_without_ce_source_the_allowlist_has_nothing_to_check() -> None:
    # A v1.4.x producer sends no ce-* header; its queue_name is the (signed) exchange.
    event = read(signed().with_headers(ce_source=None), ALLOWLISTED)
    assert event.source is None


def test_without_an_allowlist_any_ce_source_is_accepted() -> None:
    assert read(signed().with_headers(ce_source=b"//mallory/worker")).source == "//mallory/worker"
    # Unchecked, it is only a label: kept when it looks like one, else the exchange stands in.
    for hostile in (b"x" * 257, b"//a\n/b", b"\xff\xfe", b"", 5):
        assert read(signed().with_headers(ce_source=hostile)).source is None, hostile


def test_the_allowlist_runs_after_the_signature_and_the_cross_checks() -> None:
    forged = make_job_event(PREVIOUS, tenant_id="acme", job_id=JOB, timestamp=T)
    assert rejection(forged.with_headers(ce_source=b"//x"), ALLOWLISTED) is (
        Reason.SIGNATURE_MISMATCH
    )
    both = signed().with_headers(ce_source=b"//x", ce_tenantid=b"globex")
    assert rejection(both, ALLOWLISTED) is Reason.TENANT_MISMATCH


# -------------------------------------------------------------------- ce-time and ce-schemaversion


@pytest.mark.parametrize(
    ("ce_time", "kept"),
    [
        (datetime.fromtimestamp(T, UTC), True),
        (datetime.fromtimestamp(T - 3600, UTC), True),
        (datetime.fromtimestamp(T + 30, UTC), True),
        (datetime.fromtimestamp(T - 7 * 86400, UTC), True),
        (datetime.fromtimestamp(T + 31, UTC), False),
        (datetime.fromtimestamp(T - 7 * 86400 - 1, UTC), False),
        (datetime(2001, 1, 1, tzinfo=UTC), False),
        (datetime(2099, 1, 1, tzinfo=UTC), False),
    ],
)
def test_ce_time_counts_only_within_the_freshness_bounds_of_t(
    ce_time: datetime, kept: bool
) -> None:
    text = ce_time.isoformat().replace("+00:00", "Z").encode()
    event = read(signed(status="failed").with_headers(ce_time=text))
    assert event.signed_at == datetime.fromtimestamp(T, UTC)
    assert event.emitted_at == (ce_time if kept else None)


@pytest.mark.parametrize(
    ("t", "signed_at"),
    [(-62_135_596_800, datetime(1, 1, 1, tzinfo=UTC)), (-62_135_596_801, None)],
)
def test_t_must_be_a_time_of_the_years_1_to_9999_when_the_stale_check_is_lifted(
    t: int, signed_at: datetime | None
) -> None:
    # A replay with the age check off (max_age_seconds=0) lets any old `t` through to here; the
    # future check already refuses one past 9999.
    replay = VerificationPolicy(keys=[KEY], max_age_seconds=0)
    event = signed(timestamp=t, emitted_at=datetime.fromtimestamp(T, UTC))
    if signed_at is None:
        with pytest.raises(RejectedMessageError, match="outside the years 1 to 9999") as rejected:
            read(event, replay)
        assert rejected.value.reason is Reason.BAD_TIMESTAMP
    else:
        read_back = read(event, replay)
        assert (read_back.signed_timestamp, read_back.signed_at) == (t, signed_at)


def test_an_unreadable_ce_time_does_not_count() -> None:
    for value in (b"yesterday", b"2026-02-30T00:00:00Z", 1783965852, b"\xff"):
        assert read(signed(status="failed").with_headers(ce_time=value)).emitted_at is None


@pytest.mark.parametrize("moment", [b"0001-01-01T00:30:00+01:00", b"9999-12-31T23:59:59-01:00"])
def test_a_time_whose_offset_leaves_the_datetime_range_does_not_count(moment: bytes) -> None:
    # Readable, but outside what datetime holds once converted to UTC: as unreadable as
    # February 30th, for the unsigned ce-time and for the signed completedAt alike.
    assert read(signed(status="failed").with_headers(ce_time=moment)).emitted_at is None
    body = completed_body(JOB, completed_at=moment.decode())
    assert read(signed(body=body)).completed_at is None


def test_ce_time_bounds_survive_a_replay_that_lifts_the_stale_check() -> None:
    # An operator's allow_stale replay turns the age check of t off, not the bound on ce-time.
    lifted = VerificationPolicy(keys=[KEY], max_age_seconds=0)
    rewritten = signed(status="failed").with_headers(ce_time=b"2001-01-01T00:00:00Z")
    assert read(rewritten, lifted, at=AT + timedelta(days=30)).emitted_at is None


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        (b"1.0.0", "1.0.0"),
        (b"2.0.0", "2.0.0"),
        (b"1.0", "1.0"),
        (b"2.1.0-rc.1", "2.1.0-rc.1"),
        ("1.0.0", "1.0.0"),
        (b"1.0.0<script>alert(1)</script>", None),
        (b"1.0.0\n", None),
        (b"1." + b"0" * 40, None),
        (b"v1", None),
        (b"", None),
        (b"\xff", None),
        (100, None),
    ],
)
def test_ce_schemaversion_is_kept_only_as_a_short_version_string(
    value: object, kept: str | None
) -> None:
    assert read(signed().with_headers(ce_schemaversion=value)).schema_version == kept


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("2026-07-13T18:04:11.204Z", datetime(2026, 7, 13, 18, 4, 11, 204000, UTC)),
        ("2026-07-13T18:04:11Z", datetime(2026, 7, 13, 18, 4, 11, tzinfo=UTC)),
        ("2026-07-13T18:04:11.123456789Z", datetime(2026, 7, 13, 18, 4, 11, 123456, UTC)),
        ("2026-07-13t18:04:11.5z", datetime(2026, 7, 13, 18, 4, 11, 500000, UTC)),
        ("2026-07-13 20:04:11+02:00", datetime(2026, 7, 13, 18, 4, 11, tzinfo=UTC)),
        (" 2026-07-13T18:04:11Z\n", datetime(2026, 7, 13, 18, 4, 11, tzinfo=UTC)),
        ("2026-07-13T24:00:00Z", None),
        ("2026-02-30T00:00:00Z", None),
        ("2026-07-13T18:04:60Z", None),
        ("2026-07-13", None),
        ("20260713T180411Z", None),
        ("", None),
    ],
)
def test_rfc3339_times_are_read_as_aware_utc(text: str, moment: datetime | None) -> None:
    parsed = parse_rfc3339(text)
    assert parsed == moment
    assert parsed is None or parsed.tzinfo is UTC


rfc3339_like = st.builds(
    "{}-{}-{}{}{}:{}:{}{}{}".format,
    st.sampled_from(["2026", "0001", "9999", "0000", "٢٠٢٦"]),
    st.sampled_from(["01", "02", "07", "12", "13", "00"]),
    st.sampled_from(["01", "13", "28", "29", "30", "31", "32"]),
    st.sampled_from(["T", "t", " "]),
    st.sampled_from(["00", "18", "23", "24", "99"]),
    st.sampled_from(["00", "04", "59", "60"]),
    st.sampled_from(["00", "11", "59", "60"]),
    st.sampled_from(["", ".2", ".204", ".204123", ".123456789", "."]),
    st.sampled_from(["Z", "z", "+00:00", "+02:00", "-05:30", "+24:00", ""]),
)


@given(rfc3339_like)
def test_the_fromisoformat_shortcut_reads_every_time_as_the_general_path_does(text: str) -> None:
    # parse_rfc3339 hands the producer's own form to fromisoformat; for anything the grammar
    # accepts, the answer must be the general path's.
    match = _RFC3339.fullmatch(text)
    assert parse_rfc3339(text) == (_from_fields(match) if match else None)


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


class ModelBody(BaseModel):
    """The body's rules as pydantic models, which validated it until parse_body checked them by
    hand: what parse_body is held to, value for value and first error for first error (the
    outcome carries the result as `model_dump(exclude_none=True)` made it)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)
    job_id: str = Field(validation_alias=AliasChoices("jobId", "job_id"))
    status: JobStatus
    metadata: dict[str, Any] = Field(default_factory=dict)
    result: JobResult | None = None
    execution_time_ms: StrictInt | None = Field(
        None, validation_alias=AliasChoices("executionTimeMs", "execution_time_ms")
    )
    completed_at: str | None = Field(
        None, validation_alias=AliasChoices("completedAt", "completed_at")
    )


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([0, 1, -1, 2, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**30])
    | st.floats()
    | st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.5, 9.2e18, 2.0**63, -(2.0**63), -9.3e18, 1e300])
    | st.sampled_from(["", "x", "true", "1", "2026-07-13T18:04:11Z"])
    | st.sampled_from(["TRUE", "Yes", "oN", "f", "N", "off", "0", " true", "2", "\u017f", "\u0130"])
)
result_keys = st.sampled_from(
    [
        "path",
        "sizeBytes",
        "size_bytes",
        "rowCount",
        "row_count",
        "format",
        "hmac",
        "integrity",
        "protection",
        "x",
    ]
)
nested = st.dictionaries(
    st.sampled_from(
        ["algorithm", "signature", "encrypted", "mode", "appliedBy", "applied_by", "x"]
    ),
    json_scalars,
    max_size=4,
)
field_values = (
    json_scalars
    | st.lists(json_scalars, max_size=2)
    | st.dictionaries(result_keys, json_scalars | nested, max_size=4)
)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=1000)
@given(
    fields=st.dictionaries(
        st.sampled_from(
            [
                "metadata",
                "result",
                "executionTimeMs",
                "execution_time_ms",
                "completedAt",
                "completed_at",
                "other",
            ]
        ),
        field_values,
        max_size=5,
    ),
    status=st.sampled_from(["completed", "failed"]),
    snake_case=st.booleans(),
)
def test_the_body_is_read_as_a_model_with_the_same_fields_reads_it(
    fields: dict[str, Any], status: str, snake_case: bool
) -> None:
    # Same values accepted, same first error (field and message) in the rejection's detail.
    document = {("job_id" if snake_case else "jobId"): JOB, "status": status, **fields}
    try:
        model = ModelBody.model_validate(document)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        with pytest.raises(RejectedMessageError) as rejected:
            parse_body(document)
        assert rejected.value.reason is Reason.MALFORMED_BODY
        assert rejected.value.detail == f"the body's field {where!r} is invalid: {first['msg']}"
    else:
        body = parse_body(document)
        assert body["job_id"] == model.job_id and body["status"] == model.status
        assert body.get("metadata", {}) == model.metadata
        result = None if model.result is None else model.result.model_dump(exclude_none=True)
        assert body.get("result") == result
        # The same types too (True is 1): the payload serializes them.
        assert repr(body.get("result")) == repr(result)
        assert body.get("execution_time_ms") == model.execution_time_ms
        assert body.get("completed_at") == model.completed_at


def _oracle_verdict(document: dict[str, Any]) -> tuple[str, Any]:
    """What the pydantic models make of a body: its result as the outcome carries it, or the
    rejection detail of its first error."""
    try:
        model = ModelBody.model_validate(document)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return "rejected", f"the body's field {where!r} is invalid: {first['msg']}"
    return "read", None if model.result is None else model.result.model_dump(exclude_none=True)


def _verdict(document: dict[str, Any]) -> tuple[str, Any]:
    try:
        body = parse_body(document)
    except RejectedMessageError as rejected:
        assert rejected.reason is Reason.MALFORMED_BODY
        return "rejected", rejected.detail
    return "read", body.get("result")


@settings(max_examples=500)
@given(flag=json_scalars | st.text(alphabet="ftrueyosnaFTRUEYOSNA01 ", max_size=5))
def test_a_results_encrypted_flag_is_read_as_a_lax_boolean(flag: Any) -> None:
    # true/false, 0/1 as an integer or a whole float, and the words yes/no/on/off/t/f/y/n/1/0/
    # true/false in any case; other whole numbers within 64 bits "cannot be interpreted", the
    # rest is "not a boolean": each wording as pydantic's lax bool gave it.
    document = {"jobId": JOB, "status": "completed", "result": {"protection": {"encrypted": flag}}}
    verdict = _verdict(document)
    assert verdict == _oracle_verdict(document)
    assert repr(verdict) == repr(_oracle_verdict(document))  # True, not 1


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        ({"metadata": []}, "'metadata' is invalid: Input should be a valid dictionary"),
        (
            {"result": "s3://x"},
            "'result' is invalid: Input should be a valid dictionary or instance of JobResult",
        ),
        (
            {"result": {"sizeBytes": "5"}},
            "'result.sizeBytes' is invalid: Input should be a valid integer",
        ),
        (
            {"result": {"row_count": True}},
            "'result.row_count' is invalid: Input should be a valid integer",
        ),
        ({"result": {"path": 5}}, "'result.path' is invalid: Input should be a valid string"),
        (
            {"result": {"integrity": []}},
            "'result.integrity' is invalid: Input should be a "
            "valid dictionary or instance of ResultIntegrity",
        ),
        (
            {"result": {"protection": {"appliedBy": 1}}},
            "'result.protection.appliedBy' is invalid: Input should be a valid string",
        ),
        (
            {"result": {"protection": {"encrypted": "maybe"}}},
            "'result.protection.encrypted' is "
            "invalid: Input should be a valid boolean, unable to interpret input",
        ),
        (
            {"result": {"protection": {"encrypted": 0.5}}},
            "'result.protection.encrypted' is invalid: Input should be a valid boolean",
        ),
        ({"executionTimeMs": 1.0}, "'executionTimeMs' is invalid: Input should be a valid integer"),
        (
            {"execution_time_ms": False},
            "'execution_time_ms' is invalid: Input should be a valid integer",
        ),
        ({"completedAt": 1783965851}, "'completedAt' is invalid: Input should be a valid string"),
        # The first bad field in the documented order is the one named.
        (
            {"completedAt": 1, "metadata": 2},
            "'metadata' is invalid: Input should be a valid dictionary",
        ),
        (
            {"executionTimeMs": "1", "result": {"hmac": 3}},
            "'result.hmac' is invalid: Input should be a valid string",
        ),
    ],
)
def test_a_malformed_body_field_is_named_in_the_rejection(
    fields: dict[str, Any], detail: str
) -> None:
    document = {
        "jobId": JOB,
        "status": "failed",
        **fields,
    }  # a failed event's result is checked too
    assert _verdict(document) == ("rejected", f"the body's field {detail}")
    assert _oracle_verdict(document) == _verdict(document)
    body = json.dumps(document).encode()
    with pytest.raises(RejectedMessageError) as rejected:
        read(signed(status="failed", body=body))
    assert (rejected.value.reason, rejected.value.detail) == (
        Reason.MALFORMED_BODY,
        f"the body's field {detail}",
    )


def test_the_result_keeps_known_fields_in_order_drops_nulls_and_unknown_keys() -> None:
    # The first key present wins, even when it holds null; the outcome gets snake_case.
    document = {
        "jobId": JOB,
        "status": "completed",
        "result": {
            "protection": {"appliedBy": None, "applied_by": "adapter", "encrypted": "yes"},
            "integrity": {},
            "x": 1,
            "size_bytes": 5,
            "sizeBytes": None,
            "rowCount": 3,
            "row_count": "ignored",
            "path": "p",
        },
        "executionTimeMs": None,
        "execution_time_ms": 5,
    }
    body = parse_body(document)
    assert json.dumps(body.get("result")) == json.dumps(
        {"path": "p", "row_count": 3, "integrity": {}, "protection": {"encrypted": True}}
    )
    assert body.get("execution_time_ms") is None
    assert _oracle_verdict(document) == ("read", body.get("result"))


def test_a_lone_surrogate_escape_reads_as_go_reads_it_and_the_event_still_serializes() -> None:
    # `\ud800` alone is valid JSON that Go's decoder reads as U+FFFD; left as a lone surrogate it
    # made every encoder (UTF-8, the webhook's JSON, SQS) fail after the claim: a lost delivery.
    body = completed_body(JOB).replace(
        b'"correlationId":"settlement-2026-07-13"',
        b'"correlationId":"a\\ud800b","pair":"\\ud83d\\ude00","\\udc00key":["\\uDFFF"]',
    )
    event = read(signed(body=body))
    assert event.metadata["correlationId"] == "a\ufffdb"
    assert event.metadata["pair"] == "\U0001f600"  # a valid pair is one character, kept
    assert event.metadata["\ufffdkey"] == ["\ufffd"]
    payload = json.loads(webhook_payload(event).encode("utf-8"))
    assert payload["data"]["fetcher"]["metadata"]["correlationId"] == "a\ufffdb"


@pytest.mark.parametrize("name", ["ce-id", "ce-subject", "ce-eventtype"])
@pytest.mark.parametrize(("value", "kind"), [(None, "NoneType"), (7, "int")])
def test_a_naming_header_present_but_not_text_is_an_event_mismatch(
    name: str, value: object, kind: str
) -> None:
    # A void header is present: it names nothing, and the message is refused, not let through
    # as if the header were absent (which it may be).
    message = signed().forwarded()
    message.headers[name] = value  # type: ignore[assignment]
    with pytest.raises(RejectedMessageError) as rejected:
        read_job_event(message, POLICY, AT)
    assert (rejected.value.reason, rejected.value.detail) == (
        Reason.EVENT_MISMATCH,
        f"header {name} is not text ({kind})",
    )
    del message.headers[name]
    assert read_job_event(message, POLICY, AT).event_id.startswith("fetcher.job.completed.")
