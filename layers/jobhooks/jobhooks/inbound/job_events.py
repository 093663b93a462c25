"""From a forwarded message to a verified, cross-checked `JobEvent`: the inbound pipeline.

Every rule of docs/fetcher-job-events.md runs here in one order, and every failure is one
`RejectedMessageError` with one reason code. Arbitrary bytes in, a verdict out.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from jobhooks.frozen_record import FrozenRecord
from jobhooks.inbound.cross_checks import (
    attributed_tenant,
    check_event_identity,
    checked_emission_time,
    checked_source,
    informational_schema_version,
    signed_timestamp,
)
from jobhooks.inbound.envelope import ForwardedMessage
from jobhooks.inbound.event import JobEvent, parse_body, parse_rfc3339, routing_status
from jobhooks.inbound.freshness import DEFAULT_FUTURE_SKEW_SECONDS
from jobhooks.inbound.keys import HmacKey
from jobhooks.inbound.rejection import Reason, RejectedMessageError
from jobhooks.inbound.signed_bytes import job_id_in, parse_json_object
from jobhooks.inbound.verification import verify_signature

DEFAULT_RETENTION_SECONDS = 7 * 24 * 3600


class VerificationPolicy(FrozenRecord):
    """How a message is verified: its HMAC keys, its freshness window and allowed sources."""

    __slots__ = (
        "allow_legacy_signatures",
        "allowed_sources",
        "keys",
        "max_age_seconds",
        "max_emission_lag_seconds",
        "max_future_seconds",
    )
    keys: Sequence[HmacKey]
    max_age_seconds: float
    max_future_seconds: float
    allow_legacy_signatures: bool
    # Empty: ce-source is not checked (a bounded label). Otherwise the only values it may have.
    allowed_sources: frozenset[str]
    # How long before `t` a ce-time still counts: the retention, kept apart from
    # max_age_seconds because an operator's replay may lift the stale check (0) for one message.
    max_emission_lag_seconds: float

    def __init__(
        self,
        keys: Sequence[HmacKey],
        max_age_seconds: float = DEFAULT_RETENTION_SECONDS,
        max_future_seconds: float = DEFAULT_FUTURE_SKEW_SECONDS,
        allow_legacy_signatures: bool = False,
        allowed_sources: frozenset[str] = frozenset(),
        max_emission_lag_seconds: float = DEFAULT_RETENTION_SECONDS,
    ) -> None:
        object.__setattr__(self, "keys", keys)
        object.__setattr__(self, "max_age_seconds", max_age_seconds)
        object.__setattr__(self, "max_future_seconds", max_future_seconds)
        object.__setattr__(self, "allow_legacy_signatures", allow_legacy_signatures)
        object.__setattr__(self, "allowed_sources", allowed_sources)
        object.__setattr__(self, "max_emission_lag_seconds", max_emission_lag_seconds)


def read_forwarded_message(
    raw: str | bytes, policy: VerificationPolicy, received_at: datetime
) -> JobEvent:
    """Decode an SQS body and read the job event in it; raises `RejectedMessageError`."""
    return read_job_event(ForwardedMessage.from_json(raw), policy, received_at)


def read_job_event(
    message: ForwardedMessage, policy: VerificationPolicy, received_at: datetime
) -> JobEvent:
    try:
        return _read(message, policy, received_at)
    except RejectedMessageError:
        raise
    except Exception as error:
        raise RejectedMessageError(
            Reason.MALFORMED_ENVELOPE,
            f"the message could not be read ({error.__class__.__name__})",
        ) from error


def _read(message: ForwardedMessage, policy: VerificationPolicy, received_at: datetime) -> JobEvent:
    routed_status, legacy_route = routing_status(message.routing_key)
    document = parse_json_object(message.body)  # once: both the signature and the model need it
    signature = verify_signature(
        headers=message.headers,
        exchange=message.exchange,
        routing_key=message.routing_key,
        body=message.body,
        keys=policy.keys,
        received_at=received_at.timestamp(),
        max_age_seconds=policy.max_age_seconds,
        max_future_seconds=policy.max_future_seconds,
        allow_legacy=policy.allow_legacy_signatures,
        job_id=job_id_in(document),
    )
    body = parse_body(document)
    tenant_id = attributed_tenant(message.headers, signature)
    event_id = check_event_identity(message.headers, body, routed_status)
    headers = message.headers
    source = checked_source(headers, policy.allowed_sources)
    # Every CloudEvents producer sends ce-specversion; the scan is for one that does not.
    has_cloudevents = "ce-specversion" in headers or any(name.startswith("ce-") for name in headers)
    status = body["status"]
    metadata = body.get("metadata", {})
    error = metadata.get("error") if status == "failed" else None
    error_message = error.get("message") if isinstance(error, dict) else None
    # In two steps, on every message: calling the class with keywords gathers all twenty into a
    # dict for `__init__` (type.__call__ passes keywords on as one), while calling `__init__`
    # itself passes them as they are, at less than half the cost.
    event = JobEvent.__new__(JobEvent)
    JobEvent.__init__(
        event,
        event_id=event_id,
        tenant_id=tenant_id,
        job_id=body["job_id"],
        status=status,
        exchange=message.exchange,
        routing_key=message.routing_key,
        vhost=message.vhost,
        source=source,
        schema_version=informational_schema_version(headers),
        emitted_at=checked_emission_time(
            headers,
            signature,
            max_lag_seconds=policy.max_emission_lag_seconds,
            max_ahead_seconds=policy.max_future_seconds,
        ),
        signed_timestamp=signed_timestamp(signature),
        received_at=received_at.astimezone(UTC),
        metadata=metadata,
        result=body.get("result") if status == "completed" else None,
        execution_time_ms=body.get("execution_time_ms"),
        completed_at=parse_rfc3339(body.get("completed_at")),
        error_message=error_message if isinstance(error_message, str) else None,
        legacy=legacy_route or not has_cloudevents,
        signature_key=signature.key_fingerprint,
        legacy_signature=signature.legacy,
    )
    return event
