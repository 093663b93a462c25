"""Messages per second from RabbitMQ into SQS through `jobhooks shovel`, beside raw boto3 loops.

    .venv/bin/python bench/shovel.py [--messages 2000] [--single-messages 500] [--rounds 3]
                                     [--concurrency 4]

Starts its own private RabbitMQ node and moto server. The same signed Fetcher events are sent:

- raw batched: one thread, a plain `SendMessageBatch` loop of 10 (the very bodies and attributes
  the shovel produces) to the same endpoint;
- raw single: one thread, one `SendMessage` per message (what batching saves);
- shovel: the real command in its own process with `--senders 1` (one call at a time, like the
  raw loop), draining a backlog of N messages from its durable quorum queue: the time from
  `amqp_consuming` in its log until its `/metrics` shows N forwarded (accepted by SQS, acked);
- with `--concurrency N`: the shovel with `--senders N` and the raw loop on N threads.

A separate process receives and deletes continuously in every phase: moto's server slows down
with every message a queue holds, and a growing queue would penalise whichever phase runs
second. moto is one Python process, so the absolute rates are moto's; compare each path with
the raw loop of the same concurrency, measured in the same run (target >= 0.8).
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path
from typing import Any

import boto3
import pika
from jobhooks_tools.local.moto_server import (
    LOCAL_REGION,
    MotoServer,
    local_aws_environment,
)
from jobhooks_tools.local.ports import free_port
from jobhooks_tools.local.rabbitmq import (
    OutgoingMessage,
    RabbitMQBroker,
    publish_confirmed,
    start_private_rabbitmq,
)
from jobhooks_tools.sample_events import demo_key, make_job_event
from jobhooks_tools.shovel.forwarding import Delivery, SqsEntry, build_sqs_entry

QUEUE = "jobhooks.shovel.bench"


def sample_messages(count: int) -> list[OutgoingMessage]:
    key = demo_key()
    messages = []
    for index in range(count):
        event = make_job_event(key, status="completed" if index % 4 else "failed")
        messages.append(OutgoingMessage(event.routing_key, event.body, dict(event.headers)))
    return messages


def sqs_entries(messages: list[OutgoingMessage]) -> list[SqsEntry]:
    """The entries the shovel would send for these messages (same bodies and attributes)."""
    properties = pika.BasicProperties(content_type="application/json", delivery_mode=2)
    return [
        build_sqs_entry(
            Delivery("/", "fetcher.job.events", m.routing_key, False, m.body, properties, m.headers)
        )
        for m in messages
    ]


# --- the drain, in its own process -------------------------------------------------------------


def drain(queue_url: str, environment: dict[str, str], stop: Any, received: Any) -> None:
    os.environ.update(environment)

    def loop() -> None:
        sqs = boto3.session.Session().client("sqs")
        while not stop.is_set():
            messages = sqs.receive_message(
                QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1
            ).get("Messages", [])
            if messages:
                sqs.delete_message_batch(
                    QueueUrl=queue_url,
                    Entries=[
                        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                        for i, m in enumerate(messages)
                    ],
                )
                with received.get_lock():
                    received.value += len(messages)

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def wait_drained(received: Synchronized[int], expected: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while received.value < expected:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the drain received {received.value} of {expected}")
        time.sleep(0.05)


# --- the phases ---------------------------------------------------------------------------------


def raw_batched(sqs: Any, queue_url: str, entries: list[SqsEntry], threads: int = 1) -> float:
    batches = [entries[start : start + 10] for start in range(0, len(entries), 10)]
    lock = threading.Lock()
    failures: list[Any] = []

    def loop(client: Any) -> None:
        while True:
            with lock:
                if not batches:
                    return
                batch = batches.pop()
            request = [entry.as_batch_entry(str(i)) for i, entry in enumerate(batch)]
            response = client.send_message_batch(QueueUrl=queue_url, Entries=request)
            failures.extend(response.get("Failed", []))

    clients = [sqs] + [boto3.session.Session().client("sqs") for _ in range(threads - 1)]
    workers = [threading.Thread(target=loop, args=(client,)) for client in clients]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    if failures:
        raise RuntimeError(f"SQS refused entries: {failures[:1]}")
    return len(entries) / elapsed


def raw_single(sqs: Any, queue_url: str, entries: list[SqsEntry]) -> float:
    started = time.perf_counter()
    for entry in entries:
        sqs.send_message(
            QueueUrl=queue_url, MessageBody=entry.body, MessageAttributes=entry.attributes
        )
    return len(entries) / (time.perf_counter() - started)


class ShovelUnderTest:
    def __init__(self, broker: RabbitMQBroker, queue_url: str, endpoint: str, senders: int):
        self.port = free_port()
        self.log = Path(tempfile.mkstemp(prefix="bench-shovel-", suffix=".log")[1])
        self.args = [
            sys.executable,
            "-m",
            "jobhooks_tools.cli.main",
            "shovel",
            "--amqp-url",
            broker.url,
            "--queue-url",
            queue_url,
            "--region",
            LOCAL_REGION,
            "--sqs-endpoint-url",
            endpoint,
            "--amqp-queue",
            QUEUE,
            "--health-port",
            str(self.port),
            "--senders",
            str(senders),
        ]
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(self.args, stdout=log, stderr=log)

    def wait_consuming(self, timeout: float = 60) -> float:
        """Returns the moment the shovel logged that it consumes."""
        deadline = time.monotonic() + timeout
        seen = self.log.read_text().count('"amqp_consuming"')
        while time.monotonic() < deadline:
            if self.log.read_text().count('"amqp_consuming"') > seen:
                return time.perf_counter()
            time.sleep(0.005)
        raise RuntimeError(f"the shovel did not consume: {self.log.read_text()[-2000:]}")

    def forwarded(self) -> float:
        url = f"http://127.0.0.1:{self.port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            for line in response.read().decode().splitlines():
                if line.startswith("jobhooks_shovel_forwarded_total"):
                    return float(line.rsplit(" ", 1)[1])
        return 0.0

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None


def shovel_rate(
    broker: RabbitMQBroker, shovel: ShovelUnderTest, messages: list[OutgoingMessage]
) -> float:
    # A backlog first, then a fresh process drains it: the rate is pure forwarding.
    publish_confirmed(broker.url, "fetcher.job.events", messages)
    shovel.start()
    try:
        started = shovel.wait_consuming()
        # Scraping costs the shovel a little CPU: often enough for a 0.5 % error, no more.
        while shovel.forwarded() < len(messages):
            time.sleep(0.05)
        return len(messages) / (time.perf_counter() - started)
    finally:
        shovel.stop()


def median_of(rounds: int, measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(rounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--single-messages", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--concurrency",
        type=int,
        default=0,
        help="also run the shovel with --senders N and the raw batched loop on N threads",
    )
    options = parser.parse_args()

    moto = MotoServer().start()
    broker = start_private_rabbitmq()
    spawn = multiprocessing.get_context("spawn")
    stop = spawn.Event()
    received: Synchronized[int] = spawn.Value("q", 0)  # type: ignore[assignment]
    drainer = None
    shovel = None
    try:
        environment = local_aws_environment(moto.endpoint_url)
        os.environ.update(environment)
        sqs = boto3.client("sqs")
        queue_url = sqs.create_queue(QueueName="jobhooks-ingest")["QueueUrl"]
        drainer = spawn.Process(target=drain, args=(queue_url, environment, stop, received))
        drainer.start()

        messages = sample_messages(options.messages)
        entries = sqs_entries(messages)
        single = entries[: options.single_messages]
        # Let the shovel declare its queue and bindings once, so the backlog has a home.
        shovel = ShovelUnderTest(broker, queue_url, moto.endpoint_url, 1)
        shovel.start()
        shovel.wait_consuming()
        shovel.stop()

        concurrency = options.concurrency if options.concurrency > 1 else None
        shovels = {
            senders: ShovelUnderTest(broker, queue_url, moto.endpoint_url, senders)
            for senders in ([1, concurrency] if concurrency else [1])
        }
        phases: list[tuple[str, Callable[[], float], int]] = [
            ("raw batched", lambda: raw_batched(sqs, queue_url, entries), len(entries)),
            ("raw single", lambda: raw_single(sqs, queue_url, single), len(single)),
        ]
        if concurrency:
            phases.append(
                (
                    f"raw batched x{concurrency}",
                    lambda: raw_batched(sqs, queue_url, entries, concurrency),
                    len(entries),
                )
            )
        for senders, under_test in shovels.items():
            phases.append(
                (
                    f"shovel x{senders}",
                    functools.partial(shovel_rate, broker, under_test, messages),
                    len(messages),
                )
            )
        results: dict[str, list[float]] = {name: [] for name, _, _ in phases}
        raw_batched(sqs, queue_url, entries[:100])  # warm-up: connections, moto's caches
        sent = 100
        for _ in range(options.rounds):
            for name, measure, count in phases:
                results[name].append(measure())
                sent += count
                wait_drained(received, sent)

        body_bytes = statistics.mean(entry.size for entry in entries)
        rate = {name: statistics.median(rates) for name, rates in results.items()}
        print(
            f"{options.messages} messages ({body_bytes:.0f} B forwarded each; raw single "
            f"{len(single)}), median of {options.rounds} rounds, moto server + private "
            "RabbitMQ node on this machine"
        )
        print(f"{'path':<18}{'msg/s':>8}  vs the raw batched loop of the same concurrency")
        for name, _, _ in sorted(phases, key=lambda phase: not phase[0].startswith("shovel")):
            threads = name.rsplit(" x", 1)[1] if " x" in name else "1"
            versus = "raw batched" if threads == "1" else f"raw batched x{threads}"
            print(f"{name:<18}{rate[name]:>8.0f}  {rate[name] / rate[versus]:.2f}x ({versus})")
        print(
            "rounds: "
            + "; ".join(
                f"{name} " + ", ".join(f"{value:.0f}" for value in values)
                for name, values in results.items()
            )
        )
    finally:
        if shovel is not None:
            shovel.stop()
        stop.set()
        if drainer is not None:
            drainer.join(timeout=15)
            if drainer.is_alive():
                drainer.kill()
        broker.stop()
        moto.stop()


if __name__ == "__main__":
    main()
