"""One poison message never stops the shovel (real RabbitMQ node, moto's SQS, `jobhooks shovel`).

Any publisher on the exchange could stop the bridge: a header pika's own decoder cannot read (a
timestamp past Python's datetime range, tables nested hundreds deep) made the consumer fail
while decoding the frame, before the shovel's error handling; the connection dropped, the broker
redelivered the same message first, forever, and every event behind it waited. Each test here
publishes one such message ahead of valid Fetcher events and requires the events to reach SQS
within seconds, the poison to be forwarded in its documented form (and read back by ingest) or
parked with its reason, and the shovel to keep running.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pika
import pika.data
import pytest
from jobhooks.inbound.job_events import VerificationPolicy, read_forwarded_message
from jobhooks_tools.local.moto_server import MotoServer
from jobhooks_tools.local.rabbitmq import RabbitMQBroker
from jobhooks_tools.local.tcp_proxy import TcpProxy
from jobhooks_tools.sample_events import demo_key, make_job_event
from jobhooks_tools.shovel import Shovel, load_settings
from jobhooks_tools.shovel.amqp_fields import install_amqp_field_codec
from jobhooks_tools.shovel.parking import DETAIL_HEADER, REASON_HEADER

from tests.fixtures.rabbitmq import (
    AmqpNames,
    EncodedField,
    OutgoingMessage,
    ShovelFactory,
    ShovelProcess,
    ce_id_of,
    fetcher_job_event,
    publish_confirmed,
    publish_encoded_fields,
    queue_depth,
    read_queue,
)
from tests.integration.test_shovel import ReceivedMessage, SqsCollector, shovel_args

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

KEY = demo_key()
POLICY = VerificationPolicy(keys=[KEY])
# "Within seconds": a healthy shovel forwards 20 events in well under one; the rest is room for
# a loaded 2-core machine.
FLOW_SECONDS = 15.0


@pytest.fixture
def ingest_queue(aws: MotoServer) -> str:
    return str(boto3.client("sqs").create_queue(QueueName="jobhooks-ingest")["QueueUrl"])


@pytest.fixture
def collector(ingest_queue: str) -> Iterator[SqsCollector]:
    with SqsCollector(ingest_queue) as running:
        yield running


def signed_event(names: AmqpNames, index: int, extra: dict[str, Any]) -> OutgoingMessage:
    """A Fetcher event signed with the demo key, plus headers the signature does not cover."""
    event = make_job_event(KEY, exchange=names.exchange, job_id=str(uuid.UUID(int=index + 1)))
    return OutgoingMessage(event.routing_key, event.body, {**event.headers, **extra})


def publish_poison_then_events(
    broker: RabbitMQBroker,
    names: AmqpNames,
    collector: SqsCollector,
    shovel: ShovelProcess,
    poison: OutgoingMessage,
) -> None:
    """Publishes the poison, then 20 valid events; they must all reach SQS within seconds, and
    the shovel must still be running and healthy."""
    publish_encoded_fields()
    events = [fetcher_job_event(index) for index in range(100, 120)]
    publish_confirmed(broker.url, names.exchange, [poison])
    publish_confirmed(broker.url, names.exchange, events)

    collector.wait_for({ce_id_of(event) for event in events}, timeout=FLOW_SECONDS)

    assert shovel.process is not None and shovel.process.poll() is None
    status, report = shovel.health()
    assert status == 200, report
    assert not shovel.events("amqp_connection_lost"), "the poison broke the connection"
    assert not shovel.events("amqp_consumer_crashed")


def forwarded_poison(collector: SqsCollector, poison: OutgoingMessage) -> ReceivedMessage:
    collector.wait_for({ce_id_of(poison)}, timeout=FLOW_SECONDS)
    assert not collector.unreadable, collector.unreadable[0][1]
    (received,) = [item for item in collector.received if item.ce_id == ce_id_of(poison)]
    # Ingest reads it back and verifies it: an odd unsigned header is no reason to reject.
    event = read_forwarded_message(received.body, POLICY, datetime.now(UTC))
    assert event.event_id == ce_id_of(poison).decode()
    return received


@pytest.mark.parametrize(
    "seconds",
    [2**63, 253_402_300_800, 2**64 - 1],
    ids=["2^63-OverflowError", "year-10000-ValueError", "largest-timestamp"],
)
def test_a_timestamp_past_pythons_range_is_forwarded_as_its_seconds_and_the_events_flow(
    rabbitmq: RabbitMQBroker,
    amqp_names: AmqpNames,
    ingest_queue: str,
    collector: SqsCollector,
    start_shovel: ShovelFactory,
    seconds: int,
) -> None:
    poison = signed_event(amqp_names, 1, {"x-expires-at": EncodedField.timestamp(seconds)})
    shovel = start_shovel(*shovel_args(rabbitmq, ingest_queue, amqp_names))
    shovel.wait_until_consuming()

    publish_poison_then_events(rabbitmq, amqp_names, collector, shovel, poison)

    received = forwarded_poison(collector, poison)
    assert ["x-expires-at", "timestamp", seconds] in json.loads(received.body)["headers"]
    assert received.forwarded.headers["x-expires-at"] == seconds
    assert read_queue(rabbitmq.url, amqp_names.parking_queue) == []
    assert shovel.terminate() == 0


def test_a_long_string_that_is_not_utf8_is_forwarded_as_a_string_not_as_bytes(
    rabbitmq: RabbitMQBroker,
    amqp_names: AmqpNames,
    ingest_queue: str,
    collector: SqsCollector,
    start_shovel: ShovelFactory,
) -> None:
    octets = b"caf\xe9 \xff\xfe"  # Latin-1 text and stray bytes: no UTF-8 decoder takes these
    poison = signed_event(amqp_names, 1, {"x-note": EncodedField.long_string(octets)})
    shovel = start_shovel(*shovel_args(rabbitmq, ingest_queue, amqp_names))
    shovel.wait_until_consuming()

    publish_poison_then_events(rabbitmq, amqp_names, collector, shovel, poison)

    received = forwarded_poison(collector, poison)
    note = ["x-note", "str_base64", base64.b64encode(octets).decode()]
    assert note in json.loads(received.body)["headers"]
    assert received.forwarded.headers["x-note"] == octets
    assert shovel.terminate() == 0


@pytest.mark.parametrize("depth", [400, 10_000])
def test_tables_nested_past_the_cap_are_parked_unencodable_byte_for_byte_and_the_events_flow(
    rabbitmq: RabbitMQBroker,
    amqp_names: AmqpNames,
    ingest_queue: str,
    collector: SqsCollector,
    start_shovel: ShovelFactory,
    depth: int,
) -> None:
    deep = EncodedField.nested_tables(depth, leaf=b"\x01vS\x00\x00\x00\x02ok")
    poison = signed_event(amqp_names, 1, {"x-deep": deep, "x-after": "kept"})
    shovel = start_shovel(*shovel_args(rabbitmq, ingest_queue, amqp_names))
    shovel.wait_until_consuming()

    publish_poison_then_events(rabbitmq, amqp_names, collector, shovel, poison)

    parked_event = shovel.wait_for_event("message_parked")
    assert parked_event["level"] == "WARNING"
    assert parked_event["reason"] == "unencodable"
    assert parked_event["ce_id"] == ce_id_of(poison).decode()
    assert len(shovel.events("message_parked")) == 1
    # pika's own decoder would fail on the parked copy too: read it as the shovel does.
    install_amqp_field_codec()
    (parked,) = read_queue(rabbitmq.url, amqp_names.parking_queue)
    assert parked.headers[REASON_HEADER] == "unencodable"
    assert "x-deep" in parked.headers[DETAIL_HEADER]
    assert parked.body == poison.body
    # Re-published byte for byte. (A quorum queue's basic.get adds x-delivery-count to the
    # headers and sorts them by name: only each entry's own bytes can be compared.)
    assert b"\x06x-deep" + deep.encoded in parked.raw_headers
    assert b"\x07x-afterS\x00\x00\x00\x04kept" in parked.raw_headers
    assert ce_id_of(poison) not in collector.ce_ids()
    metrics = shovel.metrics()
    assert metrics['jobhooks_shovel_parked_total{reason="unencodable",vhost="/"}'] == 1
    assert queue_depth(rabbitmq.url, amqp_names.queue) == 0
    assert shovel.terminate() == 0


# --- the delivery limit: a failure nobody foresaw ends after N redeliveries -------------------


@contextlib.contextmanager
def failing_frame_reads(header: str) -> Iterator[dict[str, int]]:
    """A failure nobody foresaw, inside pika, before any shovel code sees the delivery: reading
    the header table of a message that has `header` raises, in this process."""
    decode_table = pika.data.decode_table
    failures = {"count": 0}

    def decode_or_fail(encoded: bytes, offset: int) -> tuple[Any, int]:
        table, end = decode_table(encoded, offset)
        if header in table:
            failures["count"] += 1
            raise RuntimeError("injected by the test: a failure nobody foresaw")
        return table, end

    pika.data.decode_table = decode_or_fail
    try:
        yield failures
    finally:
        pika.data.decode_table = decode_table


def wait_until(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_the_delivery_limit_parks_a_message_that_keeps_breaking_the_connection(
    rabbitmq: RabbitMQBroker, amqp_names: AmqpNames, ingest_queue: str
) -> None:
    settings = load_settings(
        {
            "amqp_url": rabbitmq.url,
            "queue_url": ingest_queue,
            "exchange": amqp_names.exchange,
            "queue": amqp_names.queue,
            "parking_queue": amqp_names.parking_queue,
            "delivery_limit": "3",
            "health_port": "off",
            "retry_max_delay_seconds": "0.2",
        },
        os.environ,
    )
    poison = fetcher_job_event(1)
    poison.headers["x-unforeseen"] = "breaks every connection that reads it"
    events = [fetcher_job_event(index) for index in range(100, 120)]

    with SqsCollector(ingest_queue) as collector:
        shovel = Shovel(settings).start()
        try:
            assert shovel.wait_until_consuming(timeout=30)
            with failing_frame_reads("x-unforeseen") as failures:
                publish_confirmed(rabbitmq.url, amqp_names.exchange, [poison, *events])
                collector.wait_for({ce_id_of(event) for event in events}, timeout=FLOW_SECONDS)
                wait_until(
                    lambda: queue_depth(rabbitmq.url, amqp_names.parking_queue) >= 1,
                    FLOW_SECONDS,
                    "the poison was never dead-lettered",
                )
            # RabbitMQ (3.x) dead-letters it when it comes back a 4th time: 3 redeliveries.
            assert failures["count"] == 4
            wait_until(lambda: shovel.health()[0], 10, "the shovel did not recover")
        finally:
            shovel.stop(timeout=5)

    # Only the poison: after a broken connection the shovel takes one message at a time until
    # one is settled, so the events behind it did not come back with it until the limit.
    (parked,) = read_queue(rabbitmq.url, amqp_names.parking_queue)
    assert parked.headers["x-first-death-reason"] == "delivery_limit"
    assert parked.headers["x-first-death-queue"] == amqp_names.queue
    assert parked.headers["ce-id"] == poison.headers["ce-id"]
    assert parked.body == poison.body
    assert queue_depth(rabbitmq.url, amqp_names.queue) == 0


def test_classic_mode_parks_a_message_redelivered_past_the_limit(
    rabbitmq: RabbitMQBroker,
    moto_server: MotoServer,
    amqp_names: AmqpNames,
    ingest_queue: str,
    collector: SqsCollector,
    start_shovel: ShovelFactory,
) -> None:
    assert rabbitmq.node is not None
    held = fetcher_job_event(1)
    events = [fetcher_job_event(index) for index in range(100, 120)]
    with TcpProxy(moto_server.host, moto_server.port) as proxy:
        shovel = start_shovel(
            *shovel_args(rabbitmq, ingest_queue, amqp_names),
            "--queue-type",
            "classic",
            "--delivery-limit",
            "2",
            "--sqs-endpoint-url",
            proxy.url,
        )
        shovel.wait_until_consuming()
        # SQS unreachable: the shovel holds the message unacked while its connection breaks,
        # three times; each time the broker hands it back, marked redelivered.
        proxy.refuse()
        publish_confirmed(rabbitmq.url, amqp_names.exchange, [held])
        for delivery in range(1, 4):
            wait_until(
                lambda count=delivery: shovel.metric("jobhooks_shovel_received_total") >= count,
                FLOW_SECONDS,
                f"delivery {delivery} never arrived",
            )
            assert not shovel.events("message_parked")
            rabbitmq.node.rabbitmqctl("close_all_connections", "a link that keeps breaking")
        parked_event = shovel.wait_for_event("message_parked", timeout=FLOW_SECONDS)
        proxy.accept()
        publish_confirmed(rabbitmq.url, amqp_names.exchange, events)
        collector.wait_for({ce_id_of(event) for event in events}, timeout=FLOW_SECONDS)

    assert parked_event["level"] == "WARNING"
    assert parked_event["reason"] == "delivery_limit"
    assert parked_event["ce_id"] == ce_id_of(held).decode()
    assert parked_event["dead_lettered"] is True
    # Handled 3 times (the first delivery and 2 redeliveries), rejected the 4th time: the
    # broker moved it to the parking queue.
    assert shovel.metric("jobhooks_shovel_received_total") == 4 + len(events)
    (parked,) = read_queue(rabbitmq.url, amqp_names.parking_queue)
    assert parked.headers["x-first-death-reason"] == "rejected"
    assert parked.body == held.body
    assert ce_id_of(held) not in collector.ce_ids()
    metrics = shovel.metrics()
    assert metrics['jobhooks_shovel_parked_total{reason="delivery_limit",vhost="/"}'] == 1
    status, report = shovel.health()
    assert status == 200, report
    assert shovel.terminate() == 0


# --- upgrading: a queue declared before the shovel set a delivery limit ------------------------


def declare_queue(broker: RabbitMQBroker, queue: str, arguments: dict[str, Any]) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(broker.url))
    try:
        connection.channel().queue_declare(queue, durable=True, arguments=arguments)
    finally:
        connection.close()


def test_a_queue_declared_without_a_delivery_limit_keeps_working_with_a_warning(
    rabbitmq: RabbitMQBroker,
    amqp_names: AmqpNames,
    ingest_queue: str,
    collector: SqsCollector,
    start_shovel: ShovelFactory,
) -> None:
    # What the shovel declared before it set a delivery limit.
    declare_queue(
        rabbitmq,
        amqp_names.queue,
        {
            "x-queue-type": "quorum",
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": amqp_names.parking_queue,
        },
    )
    shovel = start_shovel(*shovel_args(rabbitmq, ingest_queue, amqp_names))
    shovel.wait_until_consuming()

    warning = shovel.wait_for_event("queue_without_delivery_limit")
    events = [fetcher_job_event(index) for index in range(20)]
    publish_confirmed(rabbitmq.url, amqp_names.exchange, events)
    collector.wait_for({ce_id_of(event) for event in events}, timeout=FLOW_SECONDS)

    assert warning["level"] == "WARNING"
    assert "delivery-limit" in warning["detail"] and "policy" in warning["detail"]
    assert len(shovel.events("queue_without_delivery_limit")) == 1
    assert shovel.terminate() == 0


def test_a_queue_with_another_delivery_limit_stops_the_shovel_saying_what_to_do(
    rabbitmq: RabbitMQBroker,
    amqp_names: AmqpNames,
    ingest_queue: str,
    start_shovel: ShovelFactory,
) -> None:
    declare_queue(
        rabbitmq,
        amqp_names.queue,
        {
            "x-queue-type": "quorum",
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": amqp_names.parking_queue,
            "x-delivery-limit": 5,
        },
    )
    shovel = start_shovel(*shovel_args(rabbitmq, ingest_queue, amqp_names))

    assert shovel.process is not None
    assert shovel.process.wait(timeout=30) == 1
    assert "another delivery limit" in shovel.log_tail()
    assert "--delivery-limit" in shovel.log_tail()
