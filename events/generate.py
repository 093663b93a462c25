"""Regenerate the sample events in this folder: `python events/generate.py`.

Every message is signed with the public demo key of events/README.md and dated 2026-07-13, and
each SQS wrapper's SentTimestamp is one second after its `t`, so the verdicts in expected.json
hold whenever the wrapper is inspected. Output is deterministic: rerunning changes nothing.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jobhooks_tools.sample_events import (
    SampleEvent,
    completed_body,
    demo_key,
    make_job_event,
)

HERE = Path(__file__).parent
T = int(datetime(2026, 7, 13, 18, 4, 12, tzinfo=UTC).timestamp())
STALE_T = T - 8 * 86400
TENANT = "acme"
QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:jobhooks-IngestQueue"


def fixed(event: SampleEvent, n: int) -> SampleEvent:
    trace = hashlib.sha256(f"trace-{n}".encode()).hexdigest()[:32]
    return event.with_headers(
        X_Request_Id=f"00000000-0000-4000-8000-{n:012d}",
        traceparent=f"00-{trace}-{trace[:16]}-01".encode(),
        Traceparent=f"00-{trace}-{trace[:16]}-01",
    )


def samples() -> dict[str, tuple[SampleEvent, int, str]]:
    """name -> (event, t, expected verdict: "accepted" or a reason code)."""
    key = demo_key()
    completed_id = "6a5b0f8c-2f1e-4a41-9f0e-3d2c1b0a9e88"
    failed_id = "6a5b0f8c-2f1e-4a41-9f0e-3d2c1b0a9e89"
    completed = make_job_event(key, tenant_id=TENANT, job_id=completed_id, timestamp=T)
    failed = make_job_event(key, status="failed", tenant_id=TENANT, job_id=failed_id, timestamp=T)
    snake = json.loads(completed_body(completed_id))
    snake_body = json.dumps(
        {
            "job_id": snake["jobId"],
            "metadata": snake["metadata"],
            "status": "completed",
            "result": {**snake["result"], "size_bytes": 184320, "row_count": 1204},
            "execution_time_ms": 8421,
            "completed_at": snake["completedAt"],
        },
        separators=(",", ":"),
    ).encode()
    return {
        "completed": (completed, T, "accepted"),
        "failed": (failed, T, "accepted"),
        "legacy": (
            make_job_event(key, job_id=completed_id, timestamp=T, legacy=True),
            T,
            "signature_mismatch (accepted with --allow-legacy)",
        ),
        "snake-case": (
            make_job_event(
                key, tenant_id=TENANT, job_id=completed_id, timestamp=T, body=snake_body
            ),
            T,
            "accepted",
        ),
        "tampered-tenant": (completed.with_headers(ce_tenantid=b"globex"), T, "tenant_mismatch"),
        "tampered-routing-key": (
            SampleEvent(completed.exchange, "job.failed", completed.headers, completed.body),
            T,
            "signature_mismatch",
        ),
        "unsigned": (
            completed.with_headers(x_message_signature=None, signature_version=None),
            T,
            "missing_signature",
        ),
        "stale": (
            make_job_event(key, tenant_id=TENANT, job_id=completed_id, timestamp=STALE_T),
            T,
            "stale_timestamp",
        ),
        # The legacy form signs `<t>.<body>` only: a tenant header added to it is unsigned.
        "legacy-other-tenant": (
            make_job_event(key, job_id=completed_id, timestamp=T, legacy=True).with_headers(
                X_Tenant_ID=TENANT
            ),
            T,
            "signature_mismatch (tenant_mismatch with --allow-legacy)",
        ),
        # A copy whose unsigned ce-time was rewritten: delivered, timed by t (18:04:12).
        "rewritten-ce-time": (
            failed.with_headers(ce_time=b"2001-01-01T00:00:00Z"),
            T,
            "accepted (timestamp_utc is t, listed in unmeasured)",
        ),
        "foreign-source": (
            completed.with_headers(ce_source=b"//mallory/worker"),
            T,
            "accepted (untrusted_source with --allowed-sources //lerian.fetcher/worker)",
        ),
    }


def sqs_record(name: str, message_id: str, body: str, sent_at_ms: int) -> dict[str, Any]:
    return {
        "messageId": message_id,
        "receiptHandle": f"demo-receipt-{name}",
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": str(sent_at_ms),
            "SenderId": "AIDADEMO",
            "ApproximateFirstReceiveTimestamp": str(sent_at_ms + 20),
        },
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(body.encode(), usedforsecurity=False).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": QUEUE_ARN,
        "awsRegion": "us-east-1",
    }


def main() -> None:
    expected = {}
    records = []
    for n, (name, (event, _, verdict)) in enumerate(samples().items()):
        received = datetime.fromtimestamp(T, UTC).isoformat(timespec="milliseconds")
        message = fixed(event, n).forwarded(received_at=received.replace("+00:00", "Z"))
        body = message.to_json()
        (HERE / "forwarded" / f"{name}.json").write_text(
            json.dumps(json.loads(body), indent=2) + "\n"
        )
        record = sqs_record(name, f"00000000-0000-4000-9000-{n:012d}", body, (T + 1) * 1000)
        records.append(record)
        (HERE / "sqs" / f"{name}.json").write_text(
            json.dumps({"Records": [record]}, indent=2) + "\n"
        )
        expected[name] = verdict
    (HERE / "sqs" / "batch.json").write_text(json.dumps({"Records": records}, indent=2) + "\n")
    (HERE / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")
    print(f"wrote {len(expected)} forwarded messages and their SQS events to {HERE}")
    print("demo key (hex):", demo_key().hex)


if __name__ == "__main__":
    main()
