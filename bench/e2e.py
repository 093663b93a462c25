"""Events per second and publish-to-receipt latency through the whole local stack.

    .venv/bin/python bench/e2e.py [--events 200] [--subscriptions 1] [--paced-rate 4]

RabbitMQ -> shovel -> SQS (moto) -> ingest -> SQS -> deliver -> a loopback receiver, all of
`jobhooks_tools.local.dev_stack` as `jobhooks dev` runs it. Two runs of N signed events: a burst (as
fast as the broker confirms them: throughput, and the latency of a backlog) and a paced one at
--paced-rate events per second, below capacity (the latency of one event through an idle
bridge). Each event's latency runs from just before its publish to the moment the receiver has
its POST; throughput is N over the time from the first publish to the last receipt.

Beside it, in the same run and against the same moto server: the emulator's raw capacity, a
SendMessageBatch + ReceiveMessage + DeleteMessageBatch loop of 10 messages of the bridge's size
on a scratch queue, and the AWS calls the bridge makes per event (counted with a botocore hook).
Raw calls per second divided by calls per event is the ceiling the emulator alone puts on the
bridge: on this machine the local stack measures moto far more than it measures jobhooks.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from typing import Any, Final

import boto3
from jobhooks.webhook_signature import webhook_id_for
from jobhooks_tools.local.demo_receiver import DemoReceiver
from jobhooks_tools.local.dev_stack import DevStack, DevStackSettings
from jobhooks_tools.local.moto_server import LOCAL_REGION
from jobhooks_tools.publisher import SamplePublisher, sample_traffic
from jobhooks_tools.sample_events import demo_key

TENANT: Final = "acme"
RAW_BODY_BYTES: Final = 2_000  # about one forwarded 1 KiB event (base64 + headers)


class CallCounter:
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def before_call(self, model: Any, **_: Any) -> None:
        with self._lock:
            self.calls[f"{model.service_model.endpoint_prefix}.{model.name}"] += 1

    def take(self) -> Counter[str]:
        with self._lock:
            taken, self.calls = self.calls, Counter()
        return taken


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--subscriptions", type=int, default=1)
    parser.add_argument(
        "--paced-rate", type=float, default=4.0, help="events per second of the paced run"
    )
    parser.add_argument("--paced-events", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--raw-messages", type=int, default=500)
    args = parser.parse_args(argv)

    counter = CallCounter()
    boto3.setup_default_session()
    assert boto3.DEFAULT_SESSION is not None
    boto3.DEFAULT_SESSION.events.register("before-call", counter.before_call)
    stack = DevStack(
        DevStackSettings(
            shovel="thread",
            api_port=None,
            capture_stdout=True,
            on_shovel_client=lambda client: client.meta.events.register(
                "before-call", counter.before_call
            ),
            on_progress=lambda line: print(f"... {line}", file=sys.stderr),
        )
    )
    receiver = DemoReceiver().start()
    try:
        stack.start()
        endpoints = _subscribe(receiver, args.subscriptions)
        print(f"... warming up with {args.warmup} events", file=sys.stderr)
        _run(stack, receiver, endpoints, args.warmup, 0.0)
        counter.take()
        print(f"... burst of {args.events} events", file=sys.stderr)
        burst = _run(stack, receiver, endpoints, args.events, 0.0)
        calls = counter.take()
        print(f"... {args.paced_events} events at {args.paced_rate:g}/s", file=sys.stderr)
        paced = _run(stack, receiver, endpoints, args.paced_events, args.paced_rate)
        clients = max(source_threads(stack), 1)
        print(f"... raw emulator loop, {args.raw_messages} messages", file=sys.stderr)
        raw = {n: _raw_sqs_loop(stack.aws_endpoint_url, args.raw_messages, n) for n in (1, clients)}
    finally:
        receiver.stop()
        stack.stop()

    calls_per_event = sum(calls.values()) / args.events
    print(f"end to end: {args.subscriptions} subscription(s), after {args.warmup} warm-up events")
    print(f"  {'run':<32}{'events/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    for name, (latencies, seconds) in (
        (f"burst of {args.events} (no rate limit)", burst),
        (f"{args.paced_events} paced at {args.paced_rate:g}/s", paced),
    ):
        quantiles = statistics.quantiles(latencies, n=100, method="inclusive")
        print(
            f"  {name:<32}{len(latencies) / seconds:>9.1f}{1000 * quantiles[49]:>9.0f}"
            f"{1000 * quantiles[98]:>9.0f}{1000 * max(latencies):>9.0f}"
        )
    print(f"  AWS calls per event {calls_per_event:.1f} (burst run):")
    for name, count in sorted(calls.items()):
        print(f"      {name:<30}{count / args.events:6.2f}")
    print("local AWS emulator (moto), same run, scratch queues, batches of 10 messages")
    print(f"  {'clients':<10}{'messages/s':>12}{'calls/s':>10}{'bridge ceiling, events/s':>27}")
    for clients_, (messages_per_second, calls_per_second) in raw.items():
        print(
            f"  {clients_:<10}{messages_per_second:>12.1f}{calls_per_second:>10.1f}"
            f"{calls_per_second / calls_per_event:>27.1f}"
        )
    print("  (bridge ceiling = emulator calls/s / bridge calls per event)")
    return 0


def source_threads(stack: DevStack) -> int:
    """How many poller threads the stack runs: the bridge's concurrent AWS clients."""
    assert stack.resources is not None
    return sum(
        min(function.maximum_concurrency or 1, stack.settings.max_concurrency)
        for function in stack.resources.functions.values()
        if function.queue
    )


def _subscribe(receiver: DemoReceiver, count: int) -> list[str]:
    from jobhooks.management.context import build_management_context
    from jobhooks.management.models import CreateSubscriptionRequest
    from jobhooks.management.settings import ManagementSettings
    from jobhooks.management.subscriptions import create_subscription

    context = build_management_context(ManagementSettings.from_env())
    endpoints = []
    for n in range(count):
        endpoint = f"subscriber-{n}"
        created = create_subscription(
            context,
            CreateSubscriptionRequest(tenant_id=TENANT, url=receiver.add_endpoint(endpoint)),
        )
        receiver.trust(endpoint, created.secret)
        endpoints.append(endpoint)
    return endpoints


def _run(
    stack: DevStack, receiver: DemoReceiver, endpoints: list[str], events: int, rate: float
) -> tuple[list[float], float]:
    traffic = list(sample_traffic(demo_key(), count=events, tenants=(TENANT,)))
    published: dict[str, float] = {}
    interval = 1.0 / rate if rate else 0.0
    started = time.time()
    with SamplePublisher(stack.amqp_url) as publisher:
        for n, publication in enumerate(traffic):
            if interval:
                time.sleep(max(0.0, started + n * interval - time.time()))
            published[webhook_id_for(publication.event_id)] = time.time()
            publisher.publish_sample(publication)

    def complete(receiver: DemoReceiver) -> bool:
        return all(
            set(published) <= {w.webhook_id for w in receiver.received(e) if w.answered < 300}
            for e in endpoints
        )

    receiver.wait_for(complete, timeout=600, what="every delivery")
    first_receipt: dict[tuple[str, str], float] = {}
    for endpoint in endpoints:
        for webhook in receiver.received(endpoint):
            if webhook.webhook_id in published and webhook.answered < 300:
                key = (endpoint, webhook.webhook_id)
                first_receipt[key] = min(
                    first_receipt.get(key, webhook.received_at), webhook.received_at
                )
    latencies = [at - published[webhook_id] for (_, webhook_id), at in first_receipt.items()]
    seconds = max(first_receipt.values()) - started
    stack.wait_until_idle(timeout=120)
    return latencies, seconds


def _raw_sqs_loop(endpoint_url: str, messages: int, clients: int) -> tuple[float, float]:
    """SendMessageBatch, ReceiveMessage, DeleteMessageBatch of 10 messages by `clients` threads,
    each on a queue of its own kept near empty (moto slows down as a queue grows)."""
    session = boto3.session.Session()
    totals = Counter[str]()
    lock = threading.Lock()

    def loop() -> None:
        with lock:
            sqs = session.client("sqs", endpoint_url=endpoint_url, region_name=LOCAL_REGION)
        queue_url = sqs.create_queue(QueueName=f"bench-raw-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        body = "x" * RAW_BODY_BYTES
        moved = calls = 0
        try:
            while moved < messages // clients:
                entries = [{"Id": str(n), "MessageBody": body} for n in range(10)]
                sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
                received = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)
                calls += 2
                handles = [m["ReceiptHandle"] for m in received.get("Messages", [])]
                if handles:
                    sqs.delete_message_batch(
                        QueueUrl=queue_url,
                        Entries=[{"Id": str(n), "ReceiptHandle": h} for n, h in enumerate(handles)],
                    )
                    calls += 1
                moved += len(handles)
        finally:
            sqs.delete_queue(QueueUrl=queue_url)
        with lock:
            totals["messages"] += moved
            totals["calls"] += calls

    threads = [threading.Thread(target=loop) for _ in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    return totals["messages"] / seconds, totals["calls"] / seconds


if __name__ == "__main__":
    sys.exit(main())
