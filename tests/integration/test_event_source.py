"""The emulated Lambda SQS event source against moto's server.

Queues stay small and drained: moto slows down as a queue grows (docs: aws-facts 4.3).
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes import SQSEvent
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.models import SqsModel
from botocore.config import Config
from jobhooks_tools.local.event_source import (
    BatchStats,
    LambdaContext,
    SqsEventSource,
    SqsUnavailableError,
    failed_item_ids,
)
from jobhooks_tools.local.moto_server import MotoServer
from jobhooks_tools.local.ports import free_port

Event = dict[str, Any]


@pytest.fixture
def sqs(aws: MotoServer) -> Any:
    return boto3.client("sqs")


def make_queue(
    sqs: Any,
    name: str = "jobs",
    *,
    visibility_timeout: int = 1,
    dead_letter_queue: str | None = None,
    max_receive_count: int = 2,
) -> str:
    attributes = {"VisibilityTimeout": str(visibility_timeout)}
    if dead_letter_queue:
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dead_letter_queue, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        attributes["RedrivePolicy"] = json.dumps(
            {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receive_count)}
        )
    url: str = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    return url


def send(sqs: Any, queue_url: str, *bodies: str) -> list[str]:
    ids: list[str] = []
    for start in range(0, len(bodies), 10):
        entries = [
            {"Id": str(n), "MessageBody": body} for n, body in enumerate(bodies[start : start + 10])
        ]
        response = sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
        assert not response.get("Failed")
        ids.extend(entry["MessageId"] for entry in response["Successful"])
    return ids


def depth(sqs: Any, queue_url: str) -> dict[str, int]:
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return {
        "visible": int(attributes["ApproximateNumberOfMessages"]),
        "in_flight": int(attributes["ApproximateNumberOfMessagesNotVisible"]),
    }


class RecordingHandler:
    """A handler that remembers every event and fails the records `fails` picks."""

    def __init__(self, fails: Callable[[Event], bool] = lambda record: False) -> None:
        self.fails = fails
        self.events: list[Event] = []
        self.contexts: list[LambdaContext] = []
        self._lock = threading.Lock()

    def __call__(self, event: Event, context: LambdaContext) -> dict[str, Any]:
        with self._lock:
            self.events.append(event)
            self.contexts.append(context)
        failures = [
            {"itemIdentifier": record["messageId"]}
            for record in event["Records"]
            if self.fails(record)
        ]
        return {"batchItemFailures": failures}

    @property
    def records(self) -> list[Event]:
        return [record for event in self.events for record in event["Records"]]


def poller(sqs: Any, queue_url: str, handler: Any, **options: Any) -> SqsEventSource:
    options.setdefault("function_timeout_seconds", 1)
    options.setdefault("wait_time_seconds", 0)
    return SqsEventSource(queue_url, handler, sqs_client=sqs, **options)


# -- the event a handler receives ----------------------------------------------------------


def test_handler_receives_the_lambda_sqs_event_shape(sqs: Any) -> None:
    queue_url = make_queue(sqs)
    body = json.dumps({"format": "jobhooks.amqp/1", "note": "héllo"})
    sqs.send_message(
        QueueUrl=queue_url,
        MessageBody=body,
        MessageAttributes={
            "ce-id": {"DataType": "String", "StringValue": "fetcher.job.completed.1"},
            "signature": {"DataType": "Binary", "BinaryValue": b"\x00\xffsig"},
            "schema": {"DataType": "Number", "StringValue": "1"},
        },
    )
    handler = RecordingHandler()
    source = poller(sqs, queue_url, handler, function_name="IngestFunction", memory_limit_in_mb=256)
    stats = source.run_once()
    assert stats.received == 1

    event = handler.events[0]
    assert list(event) == ["Records"]
    record = event["Records"][0]
    assert set(record) == {
        "messageId",
        "receiptHandle",
        "body",
        "attributes",
        "messageAttributes",
        "md5OfBody",
        "md5OfMessageAttributes",
        "eventSource",
        "eventSourceARN",
        "awsRegion",
    }
    assert set(record["attributes"]) == {
        "ApproximateReceiveCount",
        "SentTimestamp",
        "SenderId",
        "ApproximateFirstReceiveTimestamp",
    }
    assert all(isinstance(value, str) for value in record["attributes"].values())
    assert record["messageAttributes"]["ce-id"] == {
        "stringValue": "fetcher.job.completed.1",
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "String",
    }
    assert record["messageAttributes"]["signature"] == {
        "binaryValue": base64.b64encode(b"\x00\xffsig").decode(),
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "Binary",
    }
    json.dumps(event)  # what Lambda hands over is JSON

    parsed: SQSRecord = next(iter(SQSEvent(event).records))
    assert parsed.message_id == stats.succeeded_ids[0]
    assert parsed.body == body
    assert parsed.json_body["note"] == "héllo"
    assert parsed.receipt_handle
    assert parsed.attributes.approximate_receive_count == "1"
    assert int(parsed.attributes.sent_timestamp) <= int(
        parsed.attributes.approximate_first_receive_timestamp
    )
    assert parsed.attributes.sender_id
    ce_id, schema, signature = (
        parsed.message_attributes[name] for name in ("ce-id", "schema", "signature")
    )
    assert ce_id is not None and ce_id.string_value == "fetcher.job.completed.1"
    assert schema is not None and schema.data_type == "Number"
    assert signature is not None and signature.binary_value is not None
    assert base64.b64decode(signature.binary_value) == b"\x00\xffsig"
    assert parsed.md5_of_body == hashlib.md5(body.encode()).hexdigest()
    assert parsed.event_source == "aws:sqs"
    assert parsed.event_source_arn == "arn:aws:sqs:us-east-1:123456789012:jobs"
    assert parsed.aws_region == "us-east-1"
    # The Powertools parser model (pydantic, strict about types) accepts it too.
    assert parse(event=event, model=SqsModel).Records[0].messageId == parsed.message_id

    context = handler.contexts[0]
    assert context.function_name == "IngestFunction"
    assert context.memory_limit_in_mb == 256
    assert context.invoked_function_arn.endswith(":function:IngestFunction")
    assert len(context.aws_request_id) == 36
    assert 0 < context.get_remaining_time_in_millis() <= 1000


def test_every_batch_gets_its_own_request_id_and_a_fresh_clock(sqs: Any) -> None:
    queue_url = make_queue(sqs)
    send(sqs, queue_url, "a")
    handler = RecordingHandler()
    source = poller(sqs, queue_url, handler, batch_size=1)
    source.run_once()
    send(sqs, queue_url, "b")
    source.run_once()
    first, second = handler.contexts
    assert first.aws_request_id != second.aws_request_id
    time.sleep(0.2)
    assert first.get_remaining_time_in_millis() <= 800


def test_batches_hold_at_most_batch_size_records(sqs: Any) -> None:
    queue_url = make_queue(sqs)
    send(sqs, queue_url, *[f"m{n}" for n in range(7)])
    handler = RecordingHandler()
    stats = poller(sqs, queue_url, handler, batch_size=3).run_until_idle(10)
    assert stats.received == 7
    assert max(len(event["Records"]) for event in handler.events) <= 3


def test_a_batching_window_waits_for_more_messages_before_invoking(sqs: Any) -> None:
    queue_url = make_queue(sqs, visibility_timeout=30)
    send(sqs, queue_url, "first")
    later = threading.Timer(0.5, lambda: send(sqs, queue_url, "second", "third"))
    later.start()
    handler = RecordingHandler()
    try:
        stats = poller(sqs, queue_url, handler, batch_size=10, batching_window_seconds=2).run_once(
            wait_time_seconds=0
        )
    finally:
        later.join()

    # One invocation with all three, as Lambda's MaximumBatchingWindowInSeconds would make it.
    assert stats.received == 3
    assert [len(event["Records"]) for event in handler.events] == [3]


def test_a_batching_window_ends_a_batch_once_it_is_full(sqs: Any) -> None:
    queue_url = make_queue(sqs, visibility_timeout=30)
    send(sqs, queue_url, *[f"m{n}" for n in range(3)])
    handler = RecordingHandler()
    began = time.monotonic()

    stats = poller(sqs, queue_url, handler, batch_size=3, batching_window_seconds=20).run_once(
        wait_time_seconds=0
    )

    assert stats.received == 3
    assert time.monotonic() - began < 10  # full: no waiting for the window


def test_a_long_batching_window_keeps_its_batch_with_the_default_client(sqs: Any) -> None:
    # The window long-polls for the rest of it (11 s here): longer than the default client's
    # read timeout for a poller that waits 0 s (10 s), which used to fail the receive and leave
    # the batch's first message in flight until its visibility timeout.
    queue_url = make_queue(sqs, visibility_timeout=30)
    send(sqs, queue_url, "only")
    handler = RecordingHandler()
    source = SqsEventSource(
        queue_url,
        handler,
        wait_time_seconds=0,
        batch_size=2,
        batching_window_seconds=12,
        function_timeout_seconds=1,
    )

    stats = source.run_once()

    assert stats.received == 1 and stats.deleted == 1
    assert [len(event["Records"]) for event in handler.events] == [1]


# -- partial batch responses ---------------------------------------------------------------


def test_successes_are_deleted(sqs: Any) -> None:
    queue_url = make_queue(sqs)
    ids = send(sqs, queue_url, "a", "b", "c")
    stats = poller(sqs, queue_url, RecordingHandler()).run_once()
    assert stats.received == stats.succeeded == stats.deleted == 3
    assert sorted(stats.succeeded_ids) == sorted(ids)
    assert depth(sqs, queue_url) == {"visible": 0, "in_flight": 0}


def test_partial_failures_stay_invisible_then_come_back_counted(sqs: Any) -> None:
    queue_url = make_queue(sqs, visibility_timeout=1)
    send(sqs, queue_url, "ok-1", "fail", "ok-2")
    handler = RecordingHandler(fails=lambda record: record["body"] == "fail")
    source = poller(sqs, queue_url, handler)

    stats = source.run_once()
    assert (stats.received, stats.succeeded, stats.failed, stats.deleted) == (3, 2, 1, 2)
    assert stats.failed_batches == 0
    assert depth(sqs, queue_url) == {"visible": 0, "in_flight": 1}
    assert source.run_once().received == 0  # not made visible early

    # Back once its visibility timeout (1 s) ended: polled for, not slept for.
    deadline = time.monotonic() + 30
    again = source.run_once()
    while again.received == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
        again = source.run_once()
    assert again.received == 1
    record = handler.events[-1]["Records"][0]
    assert record["body"] == "fail"
    assert record["attributes"]["ApproximateReceiveCount"] == "2"


def test_a_handler_may_set_the_visibility_of_its_failures(sqs: Any) -> None:
    queue_url = make_queue(sqs, visibility_timeout=1)
    send(sqs, queue_url, "later", "now")
    changed_at: list[float] = []

    def back_off(event: Event, context: LambdaContext) -> dict[str, Any]:
        for record in event["Records"]:
            delay = 3 if record["body"] == "later" else 0
            sqs.change_message_visibility(
                QueueUrl=queue_url, ReceiptHandle=record["receiptHandle"], VisibilityTimeout=delay
            )
        changed_at.append(time.monotonic())
        return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}

    assert poller(sqs, queue_url, back_off).run_once().failed == 2
    recorder = RecordingHandler()
    source = poller(sqs, queue_url, recorder)
    source.run_once()
    assert [record["body"] for record in recorder.records] == ["now"]

    time.sleep(1.5)  # past the queue's own 1 s
    assert source.run_once().received == 0
    deadline = time.monotonic() + 10
    while source.run_once().received == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert time.monotonic() - changed_at[0] >= 2.9
    assert recorder.records[-1]["body"] == "later"


def test_handler_exception_fails_the_whole_batch(sqs: Any) -> None:
    queue_url = make_queue(sqs, visibility_timeout=1)
    send(sqs, queue_url, "a", "b", "c")

    def explode(event: Event, context: LambdaContext) -> object:
        raise RuntimeError("database is on fire")

    source = poller(sqs, queue_url, explode)
    stats = source.run_once()
    assert (stats.received, stats.succeeded, stats.failed, stats.deleted) == (3, 0, 3, 0)
    assert stats.failed_batches == 1
    assert stats.error is not None and "database is on fire" in stats.error
    assert depth(sqs, queue_url) == {"visible": 0, "in_flight": 3}
    assert source.counters.failed_batches == 1
    assert source.counters.sqs_errors == 0


@pytest.mark.parametrize(
    "response",
    [
        ["not", "an", "object"],
        "ok",
        {"batchItemFailures": "all"},
        {"batchItemFailures": [{"itemIdentifier": ""}]},
        {"batchItemFailures": [{"itemIdentifier": None}]},
        {"batchItemFailures": [{"itemIdentifier": "not-in-this-batch"}]},
        {"batchItemFailures": [{"id": "wrong key name"}]},
        {"batchItemFailures": [None]},
    ],
    ids=repr,
)
def test_a_malformed_batch_response_fails_the_whole_batch(sqs: Any, response: object) -> None:
    queue_url = make_queue(sqs, visibility_timeout=30)
    send(sqs, queue_url, "a", "b")
    stats = poller(sqs, queue_url, lambda event, context: response).run_once()
    assert (stats.failed, stats.deleted, stats.failed_batches) == (2, 0, 1)
    assert depth(sqs, queue_url) == {"visible": 0, "in_flight": 2}


@pytest.mark.parametrize(
    "response", [None, {}, {"batchItemFailures": []}, {"batchItemFailures": None}]
)
def test_an_empty_batch_response_is_full_success(sqs: Any, response: object) -> None:
    queue_url = make_queue(sqs)
    send(sqs, queue_url, "a", "b")
    stats = poller(sqs, queue_url, lambda event, context: response).run_once()
    assert (stats.succeeded, stats.deleted, stats.failed_batches) == (2, 2, 0)


def test_strict_responses_fail_a_handler_that_returned_nothing(sqs: Any) -> None:
    queue_url = make_queue(sqs, visibility_timeout=30)
    send(sqs, queue_url, "a")
    source = poller(sqs, queue_url, lambda event, context: None, strict_responses=True)
    stats = source.run_once()
    assert (stats.failed, stats.deleted) == (1, 0)
    assert stats.error == "handler returned None instead of a batch response"


def test_a_handler_running_past_its_timeout_fails_the_whole_batch(sqs: Any) -> None:
    queue_url = make_queue(sqs, visibility_timeout=30)
    send(sqs, queue_url, "slow")
    remaining: list[int] = []

    def slow(event: Event, context: LambdaContext) -> dict[str, Any]:
        time.sleep(0.3)
        remaining.append(context.get_remaining_time_in_millis())
        return {"batchItemFailures": []}

    stats = poller(sqs, queue_url, slow, function_timeout_seconds=0.2).run_once()
    assert remaining == [0]
    assert (stats.failed, stats.deleted) == (1, 0)
    assert stats.error is not None and stats.error.startswith("Task timed out")


def test_failed_deletes_are_reported_and_the_message_is_redelivered(sqs: Any) -> None:
    queue_url = make_queue(sqs, visibility_timeout=30)
    send(sqs, queue_url, "a", "b")

    class LosingOneReceipt:
        def __init__(self, client: Any) -> None:
            self._client = client

        def delete_message_batch(self, *, QueueUrl: str, Entries: list[dict[str, str]]) -> Any:
            Entries[0] = dict(Entries[0], ReceiptHandle="stale-receipt-handle")
            return self._client.delete_message_batch(QueueUrl=QueueUrl, Entries=Entries)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._client, name)

    source = SqsEventSource(
        queue_url, RecordingHandler(), sqs_client=LosingOneReceipt(sqs), wait_time_seconds=0
    )
    stats = source.run_once()
    assert (stats.succeeded, stats.deleted, stats.delete_failures) == (2, 1, 1)
    assert source.counters.delete_failures == 1
    assert depth(sqs, queue_url)["in_flight"] == 1


def test_powertools_batch_processor_handler_end_to_end(sqs: Any) -> None:
    queue_url = make_queue(sqs, visibility_timeout=30)
    send(sqs, queue_url, "good", "poison", "good")
    processor = BatchProcessor(event_type=EventType.SQS)

    def record_handler(record: SQSRecord) -> None:
        if record.body == "poison":
            raise ValueError("cannot parse")

    def lambda_handler(event: Event, context: LambdaContext) -> object:
        return process_partial_response(
            event=event,
            record_handler=record_handler,
            processor=processor,
            context=context,  # type: ignore[arg-type]
        )

    stats = poller(sqs, queue_url, lambda_handler).run_once()
    assert (stats.succeeded, stats.failed, stats.deleted, stats.failed_batches) == (2, 1, 2, 0)


# -- redrive -------------------------------------------------------------------------------


def test_redrives_to_the_dlq_after_max_receive_count(sqs: Any) -> None:
    dlq_url = make_queue(sqs, "jobs-dlq", visibility_timeout=30)
    queue_url = make_queue(
        sqs, visibility_timeout=1, dead_letter_queue=dlq_url, max_receive_count=2
    )
    send(sqs, queue_url, "poison")
    handler = RecordingHandler(fails=lambda record: True)

    stats = poller(sqs, queue_url, handler).run_until_idle(10, include_in_flight=True)

    assert stats.received == 2
    assert [r["attributes"]["ApproximateReceiveCount"] for r in handler.records] == ["1", "2"]
    parked = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
    assert [message["Body"] for message in parked["Messages"]] == ["poison"]
    assert depth(sqs, queue_url) == {"visible": 0, "in_flight": 0}


def test_run_until_idle_times_out_while_failures_keep_coming_back(sqs: Any) -> None:
    queue_url = make_queue(sqs, visibility_timeout=1)
    send(sqs, queue_url, "forever")
    source = poller(sqs, queue_url, RecordingHandler(fails=lambda record: True))
    with pytest.raises(TimeoutError, match="was not idle"):
        source.run_until_idle(1.5, include_in_flight=True)


# -- concurrency ---------------------------------------------------------------------------


def _slow_recorder(seen: list[str], lock: threading.Lock) -> Callable[[Event, Any], Any]:
    def handle(event: Event, context: LambdaContext) -> dict[str, Any]:
        time.sleep(0.05)
        with lock:
            seen.extend(record["messageId"] for record in event["Records"])
        return {"batchItemFailures": []}

    return handle


def test_two_pollers_never_process_the_same_in_flight_message(sqs: Any) -> None:
    queue_url = make_queue(sqs, visibility_timeout=30)
    ids = send(sqs, queue_url, *[f"m{n}" for n in range(30)])
    seen: list[str] = []
    lock = threading.Lock()
    first = poller(sqs, queue_url, _slow_recorder(seen, lock), batch_size=3, wait_time_seconds=1)
    second = poller(sqs, queue_url, _slow_recorder(seen, lock), batch_size=3, wait_time_seconds=1)
    with first, second:
        deadline = time.monotonic() + 20
        while len(seen) < len(ids) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert Counter(seen) == Counter(ids)  # each exactly once
    assert first.counters.batches > 0 and second.counters.batches > 0
    assert depth(sqs, queue_url) == {"visible": 0, "in_flight": 0}


def test_concurrency_runs_several_pollers_in_one_source(sqs: Any) -> None:
    queue_url = make_queue(sqs, visibility_timeout=30)
    ids = send(sqs, queue_url, *[f"m{n}" for n in range(12)])
    seen: list[str] = []
    lock = threading.Lock()
    threads: set[str] = set()
    record = _slow_recorder(seen, lock)

    def handler(event: Event, context: LambdaContext) -> Any:
        threads.add(threading.current_thread().name)
        return record(event, context)

    source = poller(sqs, queue_url, handler, batch_size=2, wait_time_seconds=1, concurrency=3)
    with source:
        source.wait_for(lambda counters: counters.records_deleted == len(ids), timeout=20)
    assert Counter(seen) == Counter(ids)
    assert len(threads) >= 2
    assert not source.running


# -- SQS outages ---------------------------------------------------------------------------


def _client_for(endpoint_url: str) -> Any:
    return boto3.client(
        "sqs",
        endpoint_url=endpoint_url,
        config=Config(retries={"mode": "standard", "max_attempts": 1}, connect_timeout=1),
    )


def test_survives_an_unreachable_sqs_endpoint_and_reports_it(aws: MotoServer) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    errors: list[Exception] = []
    source = SqsEventSource(
        f"{closed}/123456789012/jobs",
        RecordingHandler(),
        sqs_client=_client_for(closed),
        wait_time_seconds=0,
        initial_backoff_seconds=0.05,
        max_backoff_seconds=0.2,
        on_error=errors.append,
    )
    with pytest.raises(SqsUnavailableError):
        source.run_once()
    with source:
        counters = source.wait_for(lambda counters: counters.sqs_errors >= 4, timeout=10)
        assert source.running
    assert not counters.healthy
    assert counters.last_error is not None and "EndpointConnectionError" in counters.last_error
    assert len(errors) >= 4
    assert not source.running


@pytest.fixture
def private_moto(aws: MotoServer) -> Iterator[MotoServer]:
    """A second emulator this test may stop and restart (the shared one stays up)."""
    server = MotoServer().start()
    try:
        yield server
    finally:
        server.stop()


def test_resumes_when_sqs_comes_back(private_moto: MotoServer) -> None:
    client = _client_for(private_moto.endpoint_url)
    queue_url = make_queue(client, visibility_timeout=30)
    handler = RecordingHandler()
    source = SqsEventSource(
        queue_url,
        handler,
        sqs_client=client,
        wait_time_seconds=1,
        initial_backoff_seconds=0.05,
        max_backoff_seconds=0.2,
    )
    with source:
        source.wait_for(lambda counters: counters.healthy and counters.batches == 0, timeout=5)
        private_moto.stop()
        source.wait_for(lambda counters: counters.consecutive_sqs_errors >= 2, timeout=10)
        private_moto.start()  # same port, empty state: the queue comes back empty
        make_queue(client, visibility_timeout=30)
        send(client, queue_url, "after the outage")
        counters = source.wait_for(lambda counters: counters.records_deleted == 1, timeout=10)
    assert counters.healthy
    assert [record["body"] for record in handler.records] == ["after the outage"]


# -- hooks ---------------------------------------------------------------------------------


def test_on_batch_sees_every_batch_and_a_failing_hook_is_contained(sqs: Any) -> None:
    queue_url = make_queue(sqs)
    send(sqs, queue_url, "a", "b")
    seen: list[BatchStats] = []

    def hook(stats: BatchStats) -> None:
        seen.append(stats)
        raise RuntimeError("a broken dashboard")

    stats = poller(sqs, queue_url, RecordingHandler(), on_batch=hook).run_until_idle(5)
    assert sum(batch.received for batch in seen) == stats.received == 2


def test_failed_item_ids_follows_lambda_rules() -> None:
    ids = ["m1", "m2"]
    assert failed_item_ids({"batchItemFailures": [{"itemIdentifier": "m2"}]}, ids) == ({"m2"}, None)
    assert failed_item_ids(None, ids) == (set(), None)
    failed, error = failed_item_ids({"batchItemFailures": [{"itemIdentifier": "m3"}]}, ids)
    assert failed == {"m1", "m2"}
    assert error is not None and "'m3'" in error
