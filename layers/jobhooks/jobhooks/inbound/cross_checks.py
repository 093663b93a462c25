"""Unsigned CloudEvents headers, checked against what the signature authenticates.

The HMAC covers `t`, the signature version, `X-Tenant-ID`, the body's `jobId`, the exchange, the
routing key and the body (the legacy body-only form: `t` and the body alone). Every `ce-*` header
can be changed without breaking it, and a changed copy that arrives first is the one delivered,
re-signed by us. So the bridge routes, deduplicates and attributes only on authenticated data,
rejects a message whose headers disagree with it instead of trusting either side, and lets the
rest shape the outcome only within bounds: `ce-time` within the freshness bounds of `t`,
`ce-source` within the deployment's allowlist (or as a bounded label when there is none),
`ce-schemaversion` as a short version string. docs/outcome.md lists every field's provenance.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Final

from jobhooks.inbound.envelope import (
    FIRST_DATETIME_SECOND,
    LAST_DATETIME_SECOND,
    Headers,
    HeaderValue,
    header_text,
)
from jobhooks.inbound.event import JobBody, JobStatus, parse_rfc3339
from jobhooks.inbound.rejection import Reason, RejectedMessageError
from jobhooks.inbound.verification import TENANT_HEADER, VerifiedSignature

# Single-tenant workers sign the literal `single-tenant`; a producer without tenant context
# signs an empty tenant line, which is the same situation.
SINGLE_TENANT = "single-tenant"
TENANT_CLAIMS: Final = (TENANT_HEADER, "ce-tenantid")
SOURCE_HEADER = "ce-source"
# An unchecked ce-source is a label (queue_name), not a payload channel. AMQP caps an exchange
# name, queue_name's other source, at 255 bytes.
MAX_SOURCE_CHARS = 256
# `1.0.0` on the wire, `2.0.0` in the producer's docs: semver-like, at most three numbers, an
# optional pre-release and build; ASCII digits only (`\d` would take any Unicode digit).
_SCHEMA_VERSION = re.compile(
    r"[0-9]{1,9}(?:\.[0-9]{1,9}){0,2}(?:-[0-9A-Za-z.-]{1,20})?(?:\+[0-9A-Za-z.-]{1,20})?"
)
MAX_SCHEMA_VERSION_CHARS = 32
_ABSENT = object()


def attributed_tenant(headers: Headers, signature: VerifiedSignature) -> str:
    """The tenant an event belongs to: the signed X-Tenant-ID, never an unsigned header."""
    if signature.legacy:
        return _legacy_tenant(headers)
    signed_tenant = signature.tenant_id
    claimed = header_text(headers.get("ce-tenantid"))
    if "ce-tenantid" in headers and claimed != signed_tenant:
        raise RejectedMessageError(
            Reason.TENANT_MISMATCH,
            f"ce-tenantid {_shown(claimed)} differs from the signed X-Tenant-ID "
            f"{_shown(signed_tenant)}",
        )
    return signed_tenant or SINGLE_TENANT


def _legacy_tenant(headers: Headers) -> str:
    # The body-only form signs `<t>.<body>`: a tenant header on such a message is anyone's word,
    # and honouring it would let one copy re-address an event to another tenant. v1.4.x
    # producers sign multi-tenant publishes not at all, so a legacy signature is single-tenant.
    for name in TENANT_CLAIMS:
        if headers.get(name) is None:  # absent, or an AMQP void: names no tenant
            continue
        claimed = header_text(headers[name])
        if claimed not in ("", SINGLE_TENANT):
            raise RejectedMessageError(
                Reason.TENANT_MISMATCH,
                f"{name} {_shown_value(claimed, headers[name])} names a tenant, but this message "
                "verified only under the legacy body-only signature, which does not sign the "
                f"tenant, so it is {SINGLE_TENANT!r} or nothing. A multi-tenant producer needs "
                "the canonical signature, which signs X-Tenant-ID: upgrade it",
            )
    return SINGLE_TENANT


def expected_event_id(status: JobStatus, job_id: str) -> str:
    return f"fetcher.job.{status}.{job_id}"


def check_event_identity(headers: Headers, body: JobBody, routed_status: JobStatus) -> str:
    """Check that every header naming the job or its status agrees with the body; the event id."""
    status, job_id = body["status"], body["job_id"]
    if routed_status != status:
        raise RejectedMessageError(
            Reason.EVENT_MISMATCH,
            f"the routing key announces {routed_status!r} but the body's status is {status!r}",
        )
    event_type = _optional_text(headers, "ce-eventtype")
    if event_type is not None and event_type != status:
        raise RejectedMessageError(
            Reason.EVENT_MISMATCH,
            f"ce-eventtype {_shown(event_type)} disagrees with the body's status {status!r}",
        )
    subject = _optional_text(headers, "ce-subject")
    if subject is not None and subject != job_id:
        raise RejectedMessageError(
            Reason.EVENT_MISMATCH,
            f"ce-subject {_shown(subject)} is not the body's job id {_shown(job_id)}",
        )
    expected = expected_event_id(status, job_id)
    event_id = _optional_text(headers, "ce-id")
    if event_id is not None and event_id != expected:
        raise RejectedMessageError(
            Reason.EVENT_MISMATCH,
            f"ce-id {_shown(event_id)} does not name this job and status (expected "
            f"{_shown(expected)})",
        )
    return expected


def _optional_text(headers: Headers, name: str) -> str | None:
    value = headers.get(name, _ABSENT)  # one lookup: a void header (None) is present, not text
    if value is _ABSENT:
        return None
    text = header_text(value)  # type: ignore[arg-type]
    if text is None:
        raise RejectedMessageError(
            Reason.EVENT_MISMATCH, f"header {name} is not text ({type(value).__name__})"
        )
    return text


def checked_source(headers: Headers, allowed: frozenset[str]) -> str | None:
    """`ce-source` as the outcome may use it (queue_name), or None: the exchange stands in.

    With an allowlist, a present ce-source must be one of its entries, exactly, or the message
    is rejected: only a producer the deployment trusts names the queue. Without one, nothing is
    checked and the value is a label, kept when it is short, printable text.
    """
    if headers.get(SOURCE_HEADER) is None:
        return None  # absent (v1.4.x producers send no ce-* header): the signed exchange
    source = header_text(headers[SOURCE_HEADER])
    if allowed:
        if source is None or source not in allowed:
            raise RejectedMessageError(
                Reason.UNTRUSTED_SOURCE,
                f"ce-source {_shown_value(source, headers[SOURCE_HEADER])} is not one of the "
                f"{len(allowed)} allowed source(s) (AllowedSources, JOBHOOKS_ALLOWED_SOURCES); "
                "add it if this producer is yours, else find out who publishes to the exchange",
            )
        return source
    if source is None or not 0 < len(source) <= MAX_SOURCE_CHARS or not source.isprintable():
        return None
    return source


def parse_source_list(text: str) -> frozenset[str]:
    """The allowlist `//a/worker, //b/worker` as a set; empty text is the empty set (nothing
    checked). Raises `ValueError` saying what is wrong with an entry."""
    if not text.strip():
        return frozenset()
    sources = [entry.strip() for entry in text.split(",")]
    for source in sources:
        if not source:
            raise ValueError("an entry is empty: give ce-source values separated by single commas")
        if len(source) > MAX_SOURCE_CHARS:
            raise ValueError(f"{source[:40]!r}… is longer than {MAX_SOURCE_CHARS} characters")
        if not source.isprintable():
            raise ValueError(f"{source!r} holds a non-printable character")
    return frozenset(sources)


def checked_emission_time(
    headers: Headers,
    signature: VerifiedSignature,
    *,
    max_lag_seconds: float,
    max_ahead_seconds: float,
) -> datetime | None:
    """`ce-time` when it lies within the freshness bounds of the signed `t`, else None.

    The producer stamps ce-time when it emits and `t` when its outbox relays, so a genuine
    ce-time is no later than `t` (plus clock skew between two of the producer's processes) and
    no earlier than a backlog the bridge still accepts. Outside those bounds it is not a
    measurement, whoever wrote it, and the outcome is timed by `t` instead.
    """
    emitted_at = parse_rfc3339(header_text(headers.get("ce-time")))
    if emitted_at is None:
        return None
    offset = emitted_at.timestamp() - signature.timestamp
    if -max_lag_seconds <= offset <= max_ahead_seconds:
        return emitted_at
    return None


def signed_timestamp(signature: VerifiedSignature) -> int:
    """`t`, once it is a time datetime can hold (years 1 to 9999 UTC): the event's signed time.

    Kept as its seconds, which is what the claim stores; `JobEvent.signed_at` makes the datetime
    when one is asked for (building it costs more than the rest of this module's checks on every
    message). A replay that lifts the stale check lets any old `t` this far."""
    timestamp = signature.timestamp
    if not FIRST_DATETIME_SECOND <= timestamp <= LAST_DATETIME_SECOND:
        raise RejectedMessageError(
            Reason.BAD_TIMESTAMP, f"t {timestamp} is outside the years 1 to 9999"
        )
    return timestamp


def informational_schema_version(headers: Headers) -> str | None:
    """`ce-schemaversion` when it is a short version string (it is unsigned and informational)."""
    version = header_text(headers.get("ce-schemaversion"))
    if version is None or len(version) > MAX_SCHEMA_VERSION_CHARS:
        return None
    return version if _SCHEMA_VERSION.fullmatch(version) else None


def _shown(value: str | None) -> str:
    return "(absent)" if value is None else repr(value[:100])


def _shown_value(text: str | None, raw: HeaderValue) -> str:
    return f"(not text: {type(raw).__name__})" if text is None else repr(text[:100])
