"""Unsigned CloudEvents headers, checked against what the signature authenticates.

The HMAC covers `t`, the signature version, `X-Tenant-ID`, the body's `jobId`, the exchange, the
routing key and the body. Every `ce-*` header can be changed without breaking it, so the bridge
routes, deduplicates and attributes only on authenticated data, and rejects a message whose
headers disagree with it instead of trusting either side.
"""

from __future__ import annotations

from jobhooks.envelope import Headers
from jobhooks.event import JobBody, JobStatus
from jobhooks.rejection import Reason, RejectedMessageError
from jobhooks.verification import header_text

# Single-tenant workers sign the literal `single-tenant`; a producer without tenant context
# signs an empty tenant line, which is the same situation.
SINGLE_TENANT = "single-tenant"


def attributed_tenant(headers: Headers, signed_tenant: str) -> str:
    """The tenant an event belongs to: the signed X-Tenant-ID, never an unsigned header."""
    claimed = header_text(headers.get("ce-tenantid"))
    if "ce-tenantid" in headers and claimed != signed_tenant:
        raise RejectedMessageError(
            Reason.TENANT_MISMATCH,
            f"ce-tenantid {_shown(claimed)} differs from the signed X-Tenant-ID "
            f"{_shown(signed_tenant)}",
        )
    return signed_tenant or SINGLE_TENANT


def expected_event_id(status: JobStatus, job_id: str) -> str:
    return f"fetcher.job.{status}.{job_id}"


def check_event_identity(headers: Headers, body: JobBody, routed_status: JobStatus) -> str:
    """Check that every header naming the job or its status agrees with the body; the event id."""
    if routed_status != body.status:
        raise RejectedMessageError(
            Reason.EVENT_MISMATCH,
            f"the routing key announces {routed_status!r} but the body's status is {body.status!r}",
        )
    event_type = _optional_text(headers, "ce-eventtype")
    if event_type is not None and event_type != body.status:
        raise RejectedMessageError(
            Reason.EVENT_MISMATCH,
            f"ce-eventtype {_shown(event_type)} disagrees with the body's status {body.status!r}",
        )
    subject = _optional_text(headers, "ce-subject")
    if subject is not None and subject != body.job_id:
        raise RejectedMessageError(
            Reason.EVENT_MISMATCH,
            f"ce-subject {_shown(subject)} is not the body's job id {_shown(body.job_id)}",
        )
    expected = expected_event_id(body.status, body.job_id)
    event_id = _optional_text(headers, "ce-id")
    if event_id is not None and event_id != expected:
        raise RejectedMessageError(
            Reason.EVENT_MISMATCH,
            f"ce-id {_shown(event_id)} does not name this job and status (expected "
            f"{_shown(expected)})",
        )
    return expected


def _optional_text(headers: Headers, name: str) -> str | None:
    if name not in headers:
        return None
    text = header_text(headers[name])
    if text is None:
        raise RejectedMessageError(
            Reason.EVENT_MISMATCH, f"header {name} is not text ({type(headers[name]).__name__})"
        )
    return text


def _shown(value: str | None) -> str:
    return "(absent)" if value is None else repr(value[:100])
