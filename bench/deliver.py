"""Wall time of one deliver batch against slow receivers, beside the ideal and the sequential time.

    .venv/bin/python bench/deliver.py [--deliveries 10] [--latency 1.0] [--rounds 3]

N deliveries go to N loopback receivers that each take L seconds to answer. The batch is the
deliver function's own code path (`Deliverer.deliver_batch`: duplicate check, signing, POST,
attempt log write) against a private moto server for SQS, DynamoDB and KMS. The ideal is L (all
POSTs at once), the sequential figure N x L; the target is within 1.5x of L for N = 10. It also
prints the stored size of a first-attempt success, which decides its DynamoDB write units.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import statistics
import threading
import time
from typing import Any

import boto3
from jobhooks.delivery.attempt_log import AttemptLog
from jobhooks.delivery.deliver import Deliverer
from jobhooks.delivery.http_client import make_webhook_client
from jobhooks.delivery.queues import DeliveryDlq, DeliveryQueueMessages
from jobhooks.delivery_task import delivery_task_for
from jobhooks.subscriptions.store import SubscriptionStore
from jobhooks_tools.local.moto_server import MotoServer, local_aws_environment

DELIVERIES = "bench-deliveries"
SUBSCRIPTIONS = "bench-subscriptions"


def start_receiver(latency: float) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            time.sleep(latency)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    return server


def create_resources(dynamodb: Any, sqs: Any, kms: Any) -> tuple[str, str, str]:
    strings = [
        {"AttributeName": n, "AttributeType": "S"}
        for n in ("delivery_id", "subscription_id", "created_at")
    ]
    dynamodb.create_table(
        TableName=DELIVERIES,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=strings,
        KeySchema=[{"AttributeName": "delivery_id", "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by_subscription",
                "KeySchema": [
                    {"AttributeName": "subscription_id", "KeyType": "HASH"},
                    {"AttributeName": "created_at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
        ],
    )
    dynamodb.create_table(
        TableName=SUBSCRIPTIONS,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "subscription_id", "AttributeType": "S"},
            {"AttributeName": "tenant_id", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "subscription_id", "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by_tenant",
                "KeySchema": [
                    {"AttributeName": "tenant_id", "KeyType": "HASH"},
                    {"AttributeName": "subscription_id", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    dlq = sqs.create_queue(QueueName="bench-DeliveryDeadLetterQueue")["QueueUrl"]
    queue = sqs.create_queue(
        QueueName="bench-DeliveryQueue", Attributes={"VisibilityTimeout": "360"}
    )["QueueUrl"]
    key = kms.create_key(Description="bench")["KeyMetadata"]["KeyId"]
    return queue, dlq, key


def receive_batch(sqs: Any, queue_url: str, count: int) -> dict[str, Any]:
    records: list[dict[str, Any]] = []
    while len(records) < count:
        messages = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=min(10, count - len(records)),
            AttributeNames=["All"],
            WaitTimeSeconds=1,
        ).get("Messages", [])
        for message in messages:
            records.append(
                {
                    "messageId": message["MessageId"],
                    "receiptHandle": message["ReceiptHandle"],
                    "body": message["Body"],
                    "attributes": message.get("Attributes", {}),
                }
            )
    return {"Records": records}


def item_size(value: Any) -> int:
    """DynamoDB's item size rules: names and string bytes, numbers ~1 byte per 2 digits + 1,
    3 bytes per list or map plus 1 per element."""
    if isinstance(value, dict) and len(value) == 1:
        ((kind, inner),) = value.items()
        if kind == "S":
            return len(inner.encode())
        if kind == "N":
            return (len(inner.lstrip("-").replace(".", "")) + 1) // 2 + 1
        if kind == "B":
            return len(inner)
        if kind == "BOOL" or kind == "NULL":
            return 1
        if kind == "L":
            return 3 + sum(item_size(element) + 1 for element in inner)
        if kind == "M":
            return 3 + sum(
                len(name.encode()) + item_size(element) + 1 for name, element in inner.items()
            )
    raise ValueError(f"not an attribute value: {value!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=10)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n, latency = args.deliveries, args.latency

    moto = MotoServer().start()
    os.environ.update(local_aws_environment(moto.endpoint_url))
    receivers = [start_receiver(latency) for _ in range(n)]
    try:
        dynamodb, sqs, kms = boto3.client("dynamodb"), boto3.client("sqs"), boto3.client("kms")
        queue_url, dlq_url, key_id = create_resources(dynamodb, sqs, kms)
        store = SubscriptionStore(
            SUBSCRIPTIONS, dynamodb, kms, kms_key_id=key_id, allow_http_urls=True
        )
        subscriptions = [
            store.create("acme", f"http://127.0.0.1:{server.server_address[1]}/hooks").subscription
            for server in receivers
        ]
        deliverer = Deliverer(
            attempt_log=AttemptLog(DELIVERIES, dynamodb),
            subscriptions=store,
            client=make_webhook_client(allow_private_networks=True),
            queue=DeliveryQueueMessages(sqs, queue_url),
            dead_letters=DeliveryDlq(sqs, dlq_url),
            concurrency=n,
            subscription_cache_seconds=30,
        )
        walls = []
        for round_number in range(args.rounds + 1):  # round 0 warms connections and caches
            tasks = []
            for subscription in subscriptions:
                event_id = f"fetcher.job.completed.bench-{round_number}"
                payload = json.dumps({"type": "job.completed", "data": {"event_id": event_id}})
                task = delivery_task_for(
                    event_id=event_id,
                    tenant_id="acme",
                    event_type="job.completed",
                    payload=payload,
                    subscription_id=subscription.subscription_id,
                )
                tasks.append(task)
                sqs.send_message(QueueUrl=queue_url, MessageBody=task.to_json())
            event = receive_batch(sqs, queue_url, n)
            started = time.perf_counter()
            response = deliverer.deliver_batch(event)
            wall = time.perf_counter() - started
            assert response["batchItemFailures"] == [], response
            records = event["Records"]
            for first in range(0, len(records), 10):  # acked, as the event source would
                entries = [
                    {"Id": str(i), "ReceiptHandle": record["receiptHandle"]}
                    for i, record in enumerate(records[first : first + 10])
                ]
                sqs.delete_message_batch(QueueUrl=queue_url, Entries=entries)
            if round_number:
                walls.append(wall)
        deliverer.close()
        item = dynamodb.get_item(
            TableName=DELIVERIES, Key={"delivery_id": {"S": tasks[0].delivery_id}}
        )["Item"]
        size = sum(len(name.encode()) + item_size(value) for name, value in item.items())
    finally:
        for server in receivers:
            server.shutdown()
        moto.stop()

    wall = statistics.median(walls)
    print(
        f"deliver batch: N={n} deliveries, receiver latency L={latency:.3f} s, "
        f"concurrency {n}, median of {args.rounds} rounds"
    )
    print(f"  wall time        {wall:8.3f} s")
    print(f"  ideal (L)        {latency:8.3f} s")
    print(f"  sequential (NxL) {n * latency:8.3f} s")
    if latency > 0:
        print(f"  ratio to ideal   {wall / latency:8.2f}x   (target <= 1.5x for N = 10)")
    else:
        print("  (L = 0: the wall time is the bridge's own work, mostly emulator round trips)")
    units = -(-size // 1024)
    print(
        f"  stored success   {size:8d} B -> {units} write unit(s) for the base item of a "
        "first-attempt success (each index projecting it adds its own)"
    )


if __name__ == "__main__":
    main()
