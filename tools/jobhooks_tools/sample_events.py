"""Realistic signed Fetcher job events: a producer stand-in for demos, fixtures, tests and benches.

The events carry the producer's real wire shape (docs/fetcher-job-events.md): CloudEvents
headers as AMQP byte arrays, the signed headers as strings, `x-retry-count` as a 32-bit int, a
compact camelCase body in the producer's field order, and the canonical HMAC signature.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from jobhooks.inbound.envelope import ForwardedMessage, Headers
from jobhooks.inbound.keys import HmacKey, derive_external_key
from jobhooks.inbound.signed_bytes import bound_job_id, canonical_signed_bytes, legacy_signed_bytes

EXCHANGE = "fetcher.job.events"
SOURCE = "//lerian.fetcher/worker"
# The demo master key of events/README.md ("this-is-a-32-byte-master-key1234"). Never use it
# anywhere real: it is public.
DEMO_APP_ENC_KEY = "dGhpcy1pcy1hLTMyLWJ5dGUtbWFzdGVyLWtleTEyMzQ="


def demo_key() -> HmacKey:
    return derive_external_key(DEMO_APP_ENC_KEY)


@dataclass(frozen=True, slots=True)
class SampleEvent:
    """One AMQP publish as the producer makes it."""

    exchange: str
    routing_key: str
    headers: Headers
    body: bytes

    def forwarded(self, *, vhost: str = "/", received_at: str = "") -> ForwardedMessage:
        return ForwardedMessage(
            exchange=self.exchange,
            routing_key=self.routing_key,
            body=self.body,
            headers=dict(self.headers),
            vhost=vhost,
            properties={"content_type": "application/json", "delivery_mode": 2},
            received_at=received_at,
        )

    def with_headers(self, **changes: Any) -> SampleEvent:
        """A copy with headers changed (None removes one); the signature is NOT recomputed."""
        headers = dict(self.headers)
        for name, value in changes.items():
            name = name.replace("_", "-")
            if value is None:
                headers.pop(name, None)
            else:
                headers[name] = value
        return replace(self, headers=headers)


def completed_body(
    job_id: str,
    *,
    source: str = "payments",
    execution_ms: int = 8421,
    completed_at: str = "2026-07-13T18:04:11.204Z",
) -> bytes:
    result = {
        "path": f"external-data/{job_id}.json",
        "sizeBytes": 184320,
        "rowCount": 1204,
        "format": "json",
        "hmac": "9f1c" + "0" * 60,
        "integrity": {"algorithm": "HMAC-SHA256", "signature": "9f1c" + "0" * 60},
        "protection": {"encrypted": True, "mode": "adapter-managed", "appliedBy": "adapter"},
    }
    document: dict[str, Any] = {
        "jobId": job_id,
        "metadata": {"source": source, "correlationId": "settlement-2026-07-13"},
        "status": "completed",
        "result": result,
    }
    if execution_ms:
        document["executionTimeMs"] = execution_ms
    document["completedAt"] = completed_at
    return _compact(document)


def failed_body(
    job_id: str, *, source: str = "payments", message: str = "failed to connect to datasource"
) -> bytes:
    return _compact(
        {
            "jobId": job_id,
            "metadata": {"source": source, "error": {"message": message}},
            "status": "failed",
        }
    )


def make_job_event(
    key: HmacKey,
    *,
    status: str = "completed",
    tenant_id: str = "single-tenant",
    job_id: str | None = None,
    timestamp: int | None = None,
    body: bytes | None = None,
    emitted_at: datetime | None = None,
    exchange: str = EXCHANGE,
    routing_key: str | None = None,
    legacy: bool = False,
) -> SampleEvent:
    """A signed event; `legacy` makes a v1.4.x one (no ce-* headers, body-only signature)."""
    job_id = job_id or str(uuid.uuid4())
    timestamp = int(datetime.now(UTC).timestamp()) if timestamp is None else timestamp
    if body is None:
        body = completed_body(job_id) if status == "completed" else failed_body(job_id)
    if routing_key is None:
        routing_key = f"job.{status}.payments" if legacy else f"job.{status}"
    emitted = (
        (emitted_at or datetime.fromtimestamp(timestamp, UTC)).isoformat().replace("+00:00", "Z")
    )
    headers: Headers = {}
    if not legacy:
        headers.update(
            {
                "ce-specversion": b"1.0",
                "ce-id": f"fetcher.job.{status}.{job_id}".encode(),
                "ce-source": SOURCE.encode(),
                "ce-type": f"studio.lerian.job.{status}".encode(),
                "ce-time": emitted.encode(),
                "ce-schemaversion": b"1.0.0",
                "ce-resourcetype": b"job",
                "ce-eventtype": status.encode(),
                "ce-subject": job_id.encode(),
                "ce-datacontenttype": b"application/json",
                "ce-tenantid": tenant_id.encode(),
                "X-Tenant-ID": tenant_id,
            }
        )
    trace = uuid.uuid4().hex
    headers.update(
        {
            "X-Request-Id": str(uuid.uuid4()),
            "x-retry-count": 0,
            "traceparent": f"00-{trace}-{trace[:16]}-01".encode(),
            "Traceparent": f"00-{trace}-{trace[:16]}-01",
        }
    )
    if legacy:
        signed = legacy_signed_bytes(timestamp=timestamp, body=body)
    else:
        signed = canonical_signed_bytes(
            timestamp=timestamp,
            version="v1",
            tenant_id=tenant_id,
            job_id=bound_job_id(body),
            exchange=exchange,
            routing_key=routing_key,
            body=body,
        )
    headers["x-message-signature"] = hmac.new(key.secret, signed, hashlib.sha256).hexdigest()
    headers["t"] = str(timestamp)
    headers["signature-version"] = "v1"
    return SampleEvent(exchange=exchange, routing_key=routing_key, headers=headers, body=body)


def re_emit(
    event: SampleEvent, key: HmacKey, *, timestamp: int, emitted_at: datetime | None = None
) -> SampleEvent:
    """The producer's repairer re-emission: same `ce-id` and body; new `t`, signature, `ce-time`."""
    tenant = event.headers.get("X-Tenant-ID")
    status = "completed" if event.routing_key.startswith("job.completed") else "failed"
    copy = make_job_event(
        key,
        status=status,
        tenant_id=tenant if isinstance(tenant, str) else "single-tenant",
        job_id=bound_job_id(event.body) or None,
        timestamp=timestamp,
        body=event.body,
        emitted_at=emitted_at,
        exchange=event.exchange,
        routing_key=event.routing_key,
    )
    return copy


def _compact(document: dict[str, Any]) -> bytes:
    # Go's encoding/json HTML-escapes <, > and & in strings; json.dumps does not, and the
    # difference does not matter: the signature covers whatever bytes were sent.
    return json.dumps(document, separators=(",", ":")).encode("utf-8")
