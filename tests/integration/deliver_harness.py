"""What the deliver tests share: webhook receivers on loopback and the delivery resources in moto.

`Receiver` is a real HTTP server (ThreadingHTTPServer on 127.0.0.1) that answers from a script
and records every request it gets. `DeliveryBench` takes the resources the `stack` fixture made
from template.yaml in moto's server (delivery queue and DLQ with their redrive policy, the
deliveries and subscriptions tables, the KMS key), wires a `Deliverer` to them with a controlled
clock and jitter, and drives it with the local SQS event source the way Lambda would.

Time is not slept: a backoff is read off the ChangeMessageVisibility calls the deliverer makes
(`RecordingSqs`), then `fast_forward()` moves the fake clock by that much and makes the message
visible at once.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from jobhooks.delivery.attempt_log import AttemptLog
from jobhooks.delivery.deliver import Deliverer
from jobhooks.delivery.http_client import make_webhook_client
from jobhooks.delivery.model import DeliveryRecord
from jobhooks.delivery.queues import DeliveryDlq, DeliveryQueueMessages
from jobhooks.delivery.retry_schedule import DEFAULT_SCHEDULE, RetrySchedule
from jobhooks.delivery_task import DeliveryTask, delivery_task_for
from jobhooks.subscriptions.store import IssuedSecret, SubscriptionStore
from jobhooks_tools.local.event_source import BatchStats, SqsEventSource
from jobhooks_tools.local.template import LocalResources

# Jitter factor 1 + 0.2 * (2 * 0.75 - 1) = 1.1: every delay is the schedule's, plus 10 %.
JITTER_DRAW = 0.75


def jittered(seconds: int) -> int:
    return round(seconds * 1.1)


# -- receivers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """How a receiver answers one request."""

    status: int = 200
    body: bytes = b"ok"
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    hang: bool = False
    """Never answer (until the receiver stops)."""
    stream_bytes: int = 0
    """Instead of `body`, send this many bytes with no Content-Length, as fast as accepted."""


@dataclass
class ReceivedRequest:
    path: str
    headers: dict[str, str]
    body: bytes
    received_at: float
    answered_at: float | None = None
    bytes_sent: int = 0


class Receiver:
    """A webhook endpoint on 127.0.0.1: answers from `script`, then with `default`."""

    def __init__(self, *script: Reply, default: Reply | None = None) -> None:
        self._script = list(script)
        self._default = default or Reply()
        self._lock = threading.Lock()
        self.requests: list[ReceivedRequest] = []
        self._release = threading.Event()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                request = ReceivedRequest(
                    path=self.path,
                    headers={name.lower(): value for name, value in self.headers.items()},
                    body=self.rfile.read(length),
                    received_at=time.monotonic(),
                )
                with receiver._lock:
                    receiver.requests.append(request)
                    reply = receiver._script.pop(0) if receiver._script else receiver._default
                if reply.hang:
                    receiver._release.wait(60)
                    return
                if reply.delay:
                    receiver._release.wait(reply.delay)
                # The client hanging up mid-body is exactly what a capped read does.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._answer(reply, request)
                request.answered_at = time.monotonic()

            def _answer(self, reply: Reply, request: ReceivedRequest) -> None:
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if reply.stream_bytes:
                    self.end_headers()
                    chunk = b"x" * 65536
                    while request.bytes_sent < reply.stream_bytes:
                        self.wfile.write(chunk)
                        request.bytes_sent += len(chunk)
                    return
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hooks/fetcher"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()


# -- AWS side ----------------------------------------------------------------------------------


class FakeClock:
    def __init__(self, start: datetime | None = None) -> None:
        # Near the real time: the standardwebhooks verifier rejects timestamps 5 min off.
        self.now = start or datetime.now(UTC).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class RecordingSqs:
    """The real SQS client, with every visibility change written down (one per message, a
    ChangeMessageVisibilityBatch entry as one call would be), and the batch calls counted."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.visibility_changes: list[dict[str, Any]] = []
        self.visibility_calls = 0

    def change_message_visibility(self, **kwargs: Any) -> Any:
        self.visibility_changes.append(kwargs)
        self.visibility_calls += 1
        return self._client.change_message_visibility(**kwargs)

    def change_message_visibility_batch(self, **kwargs: Any) -> Any:
        self.visibility_changes += [
            {"QueueUrl": kwargs["QueueUrl"], **entry} for entry in kwargs["Entries"]
        ]
        self.visibility_calls += 1
        return self._client.change_message_visibility_batch(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    @property
    def delays(self) -> list[int]:
        return [int(change["VisibilityTimeout"]) for change in self.visibility_changes]


class DeliveryBench:
    """The deliver function's world in moto, plus receivers, a fake clock and fixed jitter."""

    def __init__(
        self,
        resources: LocalResources,
        *,
        timeout_seconds: float = 5.0,
        schedule: RetrySchedule | None = None,
    ) -> None:
        self.dynamodb = boto3.client("dynamodb")
        self.raw_sqs = boto3.client("sqs")
        self.kms = boto3.client("kms")
        self.queue_url = resources.queue_url("DeliveryQueue")
        self.dlq_url = resources.queue_url("DeliveryDeadLetterQueue")
        self.deliveries_table = resources.table_name("DeliveriesTable")
        self.clock = FakeClock()
        self.sqs = RecordingSqs(self.raw_sqs)
        self.store = SubscriptionStore(
            resources.table_name("SubscriptionsTable"),
            self.dynamodb,
            self.kms,
            kms_key_id=resources.refs["SubscriptionSecretsKey"],
            allow_http_urls=True,
        )
        self.log = AttemptLog(self.deliveries_table, self.dynamodb, clock=self.clock)
        self.schedule = schedule or DEFAULT_SCHEDULE
        self.deliverer = self.make_deliverer(timeout_seconds=timeout_seconds)
        self.source = SqsEventSource(
            self.queue_url,
            lambda event, context: self.deliverer.deliver_batch(
                event, remaining_ms=context.get_remaining_time_in_millis
            ),
            sqs_client=self.raw_sqs,
            wait_time_seconds=0,
            function_timeout_seconds=60,
            strict_responses=True,
            # The deliver function's use case, assembled here: its calls are DeliverRole's.
            principal="DeliverFunction",
        )
        self.receivers: list[Receiver] = []
        self._hidden_seen = 0

    def make_deliverer(self, *, timeout_seconds: float = 5.0, **options: Any) -> Deliverer:
        options.setdefault("schedule", self.schedule)
        return Deliverer(
            attempt_log=self.log,
            subscriptions=self.store,
            client=make_webhook_client(allow_private_networks=True, total_timeout=timeout_seconds),
            queue=DeliveryQueueMessages(self.sqs, self.queue_url),
            dead_letters=DeliveryDlq(self.sqs, self.dlq_url),
            post_timeout_seconds=timeout_seconds,
            clock=self.clock,
            random_source=lambda: JITTER_DRAW,
            **options,
        )

    def receiver(self, *script: Reply, default: Reply | None = None) -> Receiver:
        receiver = Receiver(*script, default=default)
        self.receivers.append(receiver)
        return receiver

    def subscribe(self, receiver: Receiver, tenant: str = "acme") -> IssuedSecret:
        return self.store.create(tenant, receiver.url, ["job.completed", "job.failed"])

    def task(
        self, issued: IssuedSecret, event_id: str = "fetcher.job.completed.j-1", **changes: Any
    ) -> DeliveryTask:
        subscription = issued.subscription
        task = delivery_task_for(
            event_id=event_id,
            tenant_id=subscription.tenant_id,
            event_type="job.completed",
            payload=payload_for(event_id),
            subscription_id=subscription.subscription_id,
        )
        return task.model_copy(update=changes) if changes else task

    def enqueue(self, *tasks: DeliveryTask | str) -> None:
        for task in tasks:
            body = task if isinstance(task, str) else task.to_json()
            self.raw_sqs.send_message(QueueUrl=self.queue_url, MessageBody=body)

    def run_batch(self) -> BatchStats:
        return self.source.run_once(wait_time_seconds=0)

    def fast_forward(self) -> list[int]:
        """Play the backoffs asked for since the last call: advance the clock by each delay and
        make the hidden messages visible now. The delays, in order."""
        changes = self.sqs.visibility_changes[self._hidden_seen :]
        self._hidden_seen = len(self.sqs.visibility_changes)
        for change in changes:
            self.clock.advance(int(change["VisibilityTimeout"]))
            self.raw_sqs.change_message_visibility(
                QueueUrl=self.queue_url, ReceiptHandle=change["ReceiptHandle"], VisibilityTimeout=0
            )
        return [int(change["VisibilityTimeout"]) for change in changes]

    def record(self, task: DeliveryTask) -> DeliveryRecord:
        record = self.log.find(task.delivery_id)
        assert record is not None, f"no delivery {task.delivery_id} recorded"
        return record

    def fully_written(self, task: DeliveryTask) -> bool:
        """The delivery's item exists with every attribute of its first write.

        moto applies an UpdateItem one action at a time, so a read racing it can see a partial
        item (DynamoDB itself never shows one); `attempt_count` is the last action written.
        """
        item = self.dynamodb.get_item(
            TableName=self.deliveries_table, Key={"delivery_id": {"S": task.delivery_id}}
        ).get("Item", {})
        return "attempt_count" in item

    def queue_depth(self, queue_url: str | None = None) -> int:
        attributes = self.raw_sqs.get_queue_attributes(
            QueueUrl=queue_url or self.queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return sum(int(value) for value in attributes.values())

    def parked(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.raw_sqs.receive_message(
            QueueUrl=self.dlq_url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
        ).get("Messages", [])
        return messages

    def close(self) -> None:
        for receiver in self.receivers:
            receiver.stop()
        self.deliverer.close()


def payload_for(event_id: str) -> str:
    # Not ASCII and not in json.dumps' default spacing: the receiver must get these exact bytes.
    body = {
        "type": "job.completed",
        "timestamp": "2026-07-13T18:04:11.204Z",
        "data": {"event_id": event_id, "job_name": "pagamentos-ação", "status": "success"},
    }
    return json.dumps(body, ensure_ascii=False, separators=(", ", ": "))


@contextlib.contextmanager
def delivery_bench(resources: LocalResources, **options: Any) -> Iterator[DeliveryBench]:
    bench = DeliveryBench(resources, **options)
    try:
        yield bench
    finally:
        bench.close()


def wait_until(condition: Any, timeout: float = 5.0, interval: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(interval)


def attempts_of(record: DeliveryRecord) -> Sequence[tuple[int, int | None, str | None]]:
    return [(attempt.n, attempt.status_code, attempt.error) for attempt in record.attempts]
