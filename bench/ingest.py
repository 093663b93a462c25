"""Events per second through the ingest handler, and the AWS requests it makes per event.

    .venv/bin/python bench/ingest.py [--events 200] [--subscriptions 2] [--rounds 3]

Runs `functions/ingest/app.py` unchanged against a private moto server holding template.yaml's
tables, queues and keys secret, in Lambda-sized batches of 10 records. Every DynamoDB and SQS
call the handler makes is counted with a botocore `before-call` hook and printed per event
beside the target (1 claim write per event, 1 completion record per batch, 1 SendMessageBatch
entry per delivery, the batch's entries 10 per call).

Three phases: new events (the hot path), the same events again (duplicates), and rejected
messages (quarantine). The floor, timed in the same run against the same server, is the target
requests made directly with boto3 and nothing else; moto's speed is not Lambda's, so the ratio
to the floor is the figure to watch, not the absolute rate.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import statistics
import threading
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from jobhooks.delivery_task import delivery_task_for
from jobhooks.inbound.job_events import VerificationPolicy, read_forwarded_message
from jobhooks.inbound.outcome import webhook_payload
from jobhooks.ingest.wiring import ingest_service
from jobhooks.subscriptions.store import SubscriptionStore
from jobhooks_tools.local.event_source import LambdaContext
from jobhooks_tools.local.moto_server import MotoServer, local_aws_environment
from jobhooks_tools.local.template import LocalResources, provision
from jobhooks_tools.sample_events import demo_key, make_job_event

APP = Path(__file__).resolve().parents[1] / "functions" / "ingest" / "app.py"
BATCH = 10
TENANT = "acme"


class RequestCounter:
    """Counts the calls of the handler's clients (boto3's default session) by operation."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def before_call(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        with self._lock:
            self.calls[model.name] += 1
            if model.name == "SendMessageBatch":
                entries = json.loads(params["body"]).get("Entries", [])
                self.calls["SendMessageBatch entries"] += len(entries)

    def take(self) -> Counter[str]:
        with self._lock:
            taken, self.calls = self.calls, Counter()
        return taken


def load_handler() -> Callable[[dict[str, Any], Any], Any]:
    spec = importlib.util.spec_from_file_location("jobhooks_ingest_app", APP)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler: Callable[[dict[str, Any], Any], Any] = module.handler
    return handler


def lambda_event(bodies: Sequence[str], queue_arn: str) -> dict[str, Any]:
    sent = str(int(time.time() * 1000))
    return {
        "Records": [
            {
                "messageId": str(uuid.uuid4()),
                "receiptHandle": "bench",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": sent},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": "us-east-1",
            }
            for body in bodies
        ]
    }


def context() -> LambdaContext:
    return LambdaContext(
        function_name="bench-ingest",
        memory_limit_in_mb=256,
        invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:bench-ingest",
        aws_request_id=str(uuid.uuid4()),
        deadline=time.monotonic() + 30,
    )


def run_phase(
    handler: Callable[[dict[str, Any], Any], Any],
    bodies: Sequence[str],
    queue_arn: str,
    drain: Callable[[], None],
) -> float:
    """Seconds spent in the handler for all `bodies`, in batches of 10."""
    spent = 0.0
    for start in range(0, len(bodies), BATCH):
        event = lambda_event(bodies[start : start + BATCH], queue_arn)
        began = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # the EMF blob of each invocation
            response = handler(event, context())
        spent += time.perf_counter() - began
        assert not response.get("batchItemFailures"), response
        drain()  # moto slows down as a queue grows; SQS does not
    return spent


def floor_phase(
    resources: LocalResources, events: int, subscriptions: int, drain: Callable[[], None]
) -> float:
    """The same target requests, made directly: the claim put (same condition, same item), the
    batch's real task bodies 10 per SendMessageBatch, one completion record per batch. No
    verification, no matching, no Powertools: what remains of the handler's time is its own
    overhead."""
    session = boto3.session.Session()
    dynamodb, sqs = session.client("dynamodb"), session.client("sqs")
    table = resources.table_name("ClaimsTable")
    queue = resources.queue_url("DeliveryQueue")
    event = read_forwarded_message(
        make_event_body(), VerificationPolicy(keys=[demo_key()]), datetime.now(UTC)
    )
    payload = webhook_payload(event, release="unknown")
    tasks = [
        delivery_task_for(
            event_id=event.event_id,
            tenant_id=TENANT,
            event_type=event.event_type,
            payload=payload,
            subscription_id=f"sub_{n}",
        ).to_json()
        for n in range(subscriptions)
    ]
    compressed = zlib.compress(payload.encode(), 9)
    spent = 0.0
    for first in range(0, events, BATCH):
        batch_id = uuid.uuid4().hex
        now = time.time()
        began = time.perf_counter()
        done = []
        for _ in range(min(BATCH, events - first)):
            event_id = f"fetcher.job.completed.{uuid.uuid4()}"
            done.append(event_id)
            dynamodb.put_item(
                TableName=table,
                Item={
                    "event_id": {"S": event_id},
                    "state": {"S": "in_progress"},
                    "claim_token": {"S": uuid.uuid4().hex},
                    "lease_until": {"N": str(int(now * 1000) + 30_000)},
                    "batch_id": {"S": batch_id},
                    "tenant_id": {"S": TENANT},
                    "event_type": {"S": "job.completed"},
                    "job_id": {"S": event.job_id},
                    "claimed_at": {"S": "2026-07-13T18:04:12.000Z"},
                    "expires_at": {"N": str(int(now) + 7 * 86400)},
                    "matched": {"N": str(subscriptions)},
                    "payload": {"B": compressed},
                },
                ConditionExpression=(
                    "attribute_not_exists(event_id) OR expires_at < :now "
                    "OR (#state = :in_progress AND lease_until < :now_ms "
                    "AND attribute_not_exists(batch_id))"
                ),
                ExpressionAttributeNames={"#state": "state"},
                ExpressionAttributeValues={
                    ":now": {"N": str(int(now))},
                    ":now_ms": {"N": str(int(now * 1000))},
                    ":in_progress": {"S": "in_progress"},
                },
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        bodies = tasks * len(done)
        for start in range(0, len(bodies), BATCH):
            sqs.send_message_batch(
                QueueUrl=queue,
                Entries=[
                    {"Id": str(i), "MessageBody": body}
                    for i, body in enumerate(bodies[start : start + BATCH])
                ],
            )
        dynamodb.put_item(
            TableName=table,
            Item={
                "event_id": {"S": f"batch#{batch_id}"},
                "done": {"SS": done},
                "done_at": {"S": "2026-07-13T18:04:12.100Z"},
                "expires_at": {"N": str(int(now) + 7 * 86400)},
            },
        )
        spent += time.perf_counter() - began
        drain()
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200, help="events per phase and round")
    parser.add_argument("--subscriptions", type=int, default=2, help="matching subscriptions")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the median is printed")
    args = parser.parse_args()

    server = MotoServer().start()
    try:
        os.environ.update(local_aws_environment(server.endpoint_url))
        os.environ.update(
            POWERTOOLS_SERVICE_NAME="bench-ingest",
            POWERTOOLS_METRICS_NAMESPACE="jobhooks",
            POWERTOOLS_LOG_LEVEL="ERROR",  # per-event log lines cost CloudWatch money, not CPU here
        )
        resources = provision(fetcher_keys=[demo_key().hex], endpoint_url=server.endpoint_url)
        os.environ.update(resources.environment("IngestFunction"))
        mine = boto3.session.Session()
        store = SubscriptionStore(
            resources.table_name("SubscriptionsTable"),
            mine.client("dynamodb"),
            mine.client("kms"),
            kms_key_id=resources.refs["SubscriptionSecretsKey"],
        )
        for _ in range(args.subscriptions):
            store.create(TENANT, "https://acme.example.com/hooks")
        sqs = mine.client("sqs")
        delivery_queue = resources.queue_url("DeliveryQueue")
        queue_arn = resources.arns["IngestQueue"]

        def drain() -> None:
            # Receive and delete: SQS (and moto) allow one PurgeQueue per queue a minute.
            while messages := sqs.receive_message(
                QueueUrl=delivery_queue, MaxNumberOfMessages=10, WaitTimeSeconds=0
            ).get("Messages"):
                sqs.delete_message_batch(
                    QueueUrl=delivery_queue,
                    Entries=[
                        {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]}
                        for n, m in enumerate(messages)
                    ],
                )

        counter = RequestCounter()
        session = boto3.session.Session()
        session.events.register("before-call", counter.before_call)
        boto3.DEFAULT_SESSION = session  # the handler's clients come from the default session
        ingest_service.cache_clear()
        handler = load_handler()
        with contextlib.redirect_stdout(io.StringIO()):  # warm up: the cold start's reads
            handler(lambda_event([make_event_body()], queue_arn), context())
        drain()
        counter.take()

        timings: dict[str, list[float]] = {"new": [], "duplicate": [], "rejected": [], "floor": []}
        counts: dict[str, Counter[str]] = {}
        for _ in range(args.rounds):
            fresh = [make_event_body() for _ in range(args.events)]
            rejected = ['{"format": "not-a-forwarded-message"}'] * args.events
            for phase, bodies in (("new", fresh), ("duplicate", fresh), ("rejected", rejected)):
                seconds = run_phase(handler, bodies, queue_arn, drain)
                timings[phase].append(seconds / len(bodies))
                counts[phase] = counter.take()
            timings["floor"].append(
                floor_phase(resources, args.events, args.subscriptions, drain) / args.events
            )
        report(args, timings, counts)
    finally:
        server.stop()


def make_event_body() -> str:
    return make_job_event(demo_key(), tenant_id=TENANT).forwarded().to_json()


def report(
    args: argparse.Namespace, timings: dict[str, list[float]], counts: dict[str, Counter[str]]
) -> None:
    n, subscriptions = args.events, args.subscriptions
    floor = statistics.median(timings["floor"])
    print(f"{n} events per phase, {subscriptions} matching subscriptions, batches of {BATCH}")
    print(f"{'phase':<10} {'events/s':>9} {'ms/event':>9} {'vs floor':>9}")
    for phase in ("new", "duplicate", "rejected"):
        per_event = statistics.median(timings[phase])
        print(
            f"{phase:<10} {1 / per_event:>9.1f} {per_event * 1000:>9.2f} {per_event / floor:>8.1f}x"
        )
    print(f"{'floor':<10} {1 / floor:>9.1f} {floor * 1000:>9.2f} {'1.0x':>9}")
    print()
    targets = {
        "new": {
            # The claim, and one completion record per batch of 10.
            "PutItem": 1 + 1 / BATCH,
            "SendMessageBatch entries": subscriptions,
            # A batch's tasks share calls of 10 entries.
            "SendMessageBatch": -(-subscriptions * BATCH // 10) / BATCH,
        },
        # The failed claim put, and the read of the completion record its claim names.
        "duplicate": {"PutItem": 1, "GetItem": 1},
        "rejected": {"PutItem": 1},
    }
    print(f"{'phase':<10} {'request':<26} {'per event':>9} {'target':>9}")
    for phase, wanted in targets.items():
        seen = counts[phase]
        for name in sorted(set(wanted) | set(seen)):
            # The subscription lookup is cached: one Query per tenant and type per 30 s.
            target = "cached" if name == "Query" else f"{wanted.get(name, 0):g}"
            print(f"{phase:<10} {name:<26} {seen[name] / n:>9.3f} {target:>9}")
    print(f"(median of {args.rounds} rounds; requests per event counted in the last round)")


if __name__ == "__main__":
    main()
