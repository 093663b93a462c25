"""The shovel against a real RabbitMQ node and moto's SQS server, run as `jobhooks shovel`.

Every test drains SQS while the shovel sends: moto's server gets slower with every message a
queue holds (it recounts the queue on each send), and a full queue would make the tests slow.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import boto3
import pytest
from jobhooks.inbound.envelope import SQS_MAX_MESSAGE_BYTES, ForwardedMessage
from jobhooks.inbound.rejection import RejectedMessageError
from jobhooks_tools.local.moto_server import MotoServer
from jobhooks_tools.local.rabbitmq import RabbitMQBroker
from jobhooks_tools.local.tcp_proxy import TcpProxy
from jobhooks_tools.shovel.amqp_fields import install_amqp_field_codec
from jobhooks_tools.shovel.parking import (
    DETAIL_HEADER,
    ORIGINAL_EXCHANGE_HEADER,
    ORIGINAL_ROUTING_KEY_HEADER,
    REASON_HEADER,
)

from tests.fixtures.rabbitmq import (
    AmqpNames,
    OutgoingMessage,
    ShovelFactory,
    ce_id_of,
    fetcher_job_event,
    publish_confirmed,
    queue_depth,
    read_queue,
)

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]


# --- SQS side ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReceivedMessage:
    message_id: str
    forwarded: ForwardedMessage
    attributes: dict[str, Any]
    body: str  # the SQS body as sent, to check the contract's JSON itself

    @property
    def ce_id(self) -> bytes:
        value = self.forwarded.headers["ce-id"]
        assert isinstance(value, bytes)
        return value


class SqsCollector:
    """Receives and deletes everything arriving in the queue, on several threads.

    Each SQS message is kept once: SQS may hand a message out twice (and moto's server does
    when several receivers race), which says nothing about what the shovel sent.
    """

    def __init__(self, queue_url: str, threads: int = 4) -> None:
        self.queue_url = queue_url
        self.received: list[ReceivedMessage] = []
        # Bodies the forwarded-message reader rejected (a test fails on them, the drain goes on).
        self.unreadable: list[tuple[str, RejectedMessageError]] = []
        self._message_ids: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._drain, name=f"sqs-drain-{index}", daemon=True)
            for index in range(threads)
        ]

    def __enter__(self) -> SqsCollector:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)

    def ce_ids(self) -> Counter[bytes]:
        with self._lock:
            return Counter(message.ce_id for message in self.received)

    def wait_for(self, ce_ids: set[bytes], timeout: float = 60.0) -> Counter[bytes]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            seen = self.ce_ids()
            if ce_ids <= seen.keys():
                return seen
            time.sleep(0.1)
        missing = ce_ids - self.ce_ids().keys()
        raise AssertionError(f"{len(missing)} of {len(ce_ids)} never reached SQS")

    def wait_for_count(self, count: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.received) < count:
            assert time.monotonic() < deadline, f"only {len(self.received)} of {count} arrived"
            time.sleep(0.05)

    def _drain(self) -> None:
        sqs = boto3.session.Session().client("sqs")
        while not self._stop.is_set():
            response = sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=1,
                MessageAttributeNames=["All"],
            )
            messages = response.get("Messages", [])
            if not messages:
                continue
            with self._lock:
                for message in messages:
                    if message["MessageId"] in self._message_ids:
                        continue
                    self._message_ids.add(message["MessageId"])
                    try:
                        forwarded = ForwardedMessage.from_json(message["Body"])
                    except RejectedMessageError as rejected:
                        self.unreadable.append((message["Body"], rejected))
                        continue
                    self.received.append(
                        ReceivedMessage(
                            message["MessageId"],
                            forwarded,
                            message.get("MessageAttributes", {}),
                            message["Body"],
                        )
                    )
            sqs.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[
                    {"Id": str(index), "ReceiptHandle": message["ReceiptHandle"]}
                    for index, message in enumerate(messages)
                ],
            )


@pytest.fixture
def ingest_queue(aws: MotoServer) -> str:
    return str(boto3.client("sqs").create_queue(QueueName="jobhooks-ingest")["QueueUrl"])


@pytest.fixture
def collector(ingest_queue: str) -> Iterator[SqsCollector]:
    with SqsCollector(ingest_queue) as running:
        yield running


def shovel_args(broker: RabbitMQBroker, queue_url: str, names: AmqpNames, *extra: str) -> list[str]:
    return [
        "--amqp-url",
        broker.url,
        "--queue-url",
        queue_url,
        "--exchange",
        names.exchange,
        "--amqp-queue",
        names.queue,
        "--parking-queue",
        names.parking_queue,
        "--health-port",
        "0",
        # Fast retries keep outage tests short; two senders leave moto time for the drain.
        "--retry-max-delay",
        "0.5",
        "--senders",
        "2",
        *extra,
    ]


class PacedPublisher(threading.Thread):
    """Publishes `messages` in small confirmed batches, so a failure can strike mid-stream.

    It stays at most `window` messages ahead of what reached SQS (`arrived`): the stream is
    still flowing when a test strikes after some arrived, however fast or loaded the machine,
    and a few hundred messages are enough (the shovel holds some unacked at any moment).
    """

    def __init__(
        self,
        url: str,
        exchange: str,
        messages: list[OutgoingMessage],
        arrived: Callable[[], int],
        window: int = 100,
        timeout: float = 60.0,
    ) -> None:
        super().__init__(name="paced-publisher", daemon=True)
        self.url, self.exchange, self.messages = url, exchange, messages
        self.arrived, self.window, self.timeout = arrived, window, timeout
        self.published = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for start in range(0, len(self.messages), 20):
                deadline = time.monotonic() + self.timeout
                while self.published - self.arrived() >= self.window:
                    if time.monotonic() > deadline:
                        raise AssertionError(f"nothing reached SQS for {self.timeout}s")
                    time.sleep(0.05)
                chunk = self.messages[start : start + 20]
                self.published += publish_confirmed(self.url, self.exchange, chunk)
                time.sleep(0.1)
        except BaseException as error:  # reported by the test thread
            self.error = error


def assert_same_value_and_type(expected: Any, actual: Any, where: str) -> None:
    """Equality that also tells 1 from True from 1.0 and str from bytes, recursively."""
    if isinstance(expected, dict):
        assert type(actual) is dict, f"{where}: {type(actual).__name__} is not a table"
        assert list(actual) == list(expected), f"{where}: names or order differ"
        for name, value in expected.items():
            assert_same_value_and_type(value, actual[name], f"{where}[{name!r}]")
    elif isinstance(expected, list):
        assert type(actual) is list and len(actual) == len(expected), f"{where}: list differs"
        for index, value in enumerate(expected):
            assert_same_value_and_type(value, actual[index], f"{where}[{index}]")
    else:
        # pika marks 64-bit integers with an int subclass; the contract's type is "int".
        expected_type = int if type(expected) is not bool and isinstance(expected, int) else None
        actual_type = int if type(actual) is not bool and isinstance(actual, int) else None
        assert (expected_type or type(expected)) is (actual_type or type(actual)), (
            f"{where}: {type(actual).__name__} instead of {type(expected).__name__}"
        )
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


# --- the tests --------------------------------------------------------------------------------


def test_forwards_fetcher_events_byte_for_byte_and_type_for_type(
    rabbitmq: RabbitMQBroker,
    amqp_names: AmqpNames,
    ingest_queue: str,
    collector: SqsCollector,
    start_shovel: ShovelFactory,
) -> None:
    # pika cannot publish a float header by itself; the shovel's fix makes it encode `d`.
    install_amqp_field_codec()
    # More than the prefetch (200): the shovel holds a full prefetch and both senders send
    # batches side by side, as with any larger count.
    messages = []
    for index in range(300):
        status = "completed" if index % 3 else "failed"
        message = fetcher_job_event(index, status)
        if index % 10 == 0:
            message.headers["x-ratio"] = index / 8 + 0.1
        messages.append(message)
    shovel = start_shovel(*shovel_args(rabbitmq, ingest_queue, amqp_names))
    shovel.wait_until_consuming()

    publish_confirmed(rabbitmq.url, amqp_names.exchange, messages)
    seen = collector.wait_for({ce_id_of(message) for message in messages})

    assert set(seen.values()) == {1}, "a healthy run forwards every message exactly once"
    by_ce_id = {received.ce_id: received for received in collector.received}
    for message in messages:
        received = by_ce_id[ce_id_of(message)]
        forwarded = received.forwarded
        assert forwarded.body == message.body
        assert forwarded.exchange == amqp_names.exchange
        assert forwarded.routing_key == message.routing_key
        assert forwarded.vhost == "/"
        assert forwarded.redelivered is False
        assert forwarded.properties == {"content_type": "application/json", "delivery_mode": 2}
        assert datetime.fromisoformat(forwarded.received_at)
        assert_same_value_and_type(message.headers, forwarded.headers, "headers")
        assert received.attributes["ce-id"]["StringValue"] == ce_id_of(message).decode()
        assert len(received.attributes) <= 3
    assert queue_depth(rabbitmq.url, amqp_names.queue) == 0
    assert shovel.metric("jobhooks_shovel_forwarded_total") == len(messages)
    assert shovel.terminate() == 0


def test_sigkill_mid_stream_loses_nothing(
    rabbitmq: RabbitMQBroker,
    amqp_names: AmqpNames,
    ingest_queue: str,
    collector: SqsCollector,
    start_shovel: ShovelFactory,
) -> None:
    # The publisher keeps at most 100 ahead of SQS: at the kill (150 arrived) at most 270 of
    # the 400 are published, and the shovel holds some unacked.
    messages = [fetcher_job_event(index) for index in range(400)]
    args = shovel_args(rabbitmq, ingest_queue, amqp_names)
    first = start_shovel(*args)
    first.wait_until_consuming()
    publisher = PacedPublisher(
        rabbitmq.url, amqp_names.exchange, messages, arrived=lambda: len(collector.received)
    )
    publisher.start()

    collector.wait_for_count(150)
    first.kill()
    assert 0 < publisher.published < len(messages), "the kill must land mid-stream"
    second = start_shovel(*args)
    second.wait_until_consuming()
    publisher.join(timeout=60)
    assert publisher.error is None

    seen = collector.wait_for({ce_id_of(message) for message in messages})
    assert sum(seen.values()) >= len(messages)
    assert queue_depth(rabbitmq.url, amqp_names.queue) == 0
    assert second.terminate() == 0


def test_sqs_refusing_connections_acks_nothing_unsent_and_resumes(
    rabbitmq: RabbitMQBroker,
    moto_server: MotoServer,
    amqp_names: AmqpNames,
    ingest_queue: str,
    collector: SqsCollector,
    start_shovel: ShovelFactory,
) -> None:
    before = [fetcher_job_event(index) for index in range(100)]
    during = [fetcher_job_event(index) for index in range(100, 400)]
    with TcpProxy(moto_server.host, moto_server.port) as proxy:
        # A classic queue: rabbitmqctl reports its unacked count live (a quorum queue's lags).
        shovel = start_shovel(
            *shovel_args(rabbitmq, ingest_queue, amqp_names),
            "--queue-type",
            "classic",
            "--sqs-endpoint-url",
            proxy.url,
        )
        shovel.wait_until_consuming()
        publish_confirmed(rabbitmq.url, amqp_names.exchange, before)
        collector.wait_for({ce_id_of(message) for message in before})

        proxy.refuse()
        publish_confirmed(rabbitmq.url, amqp_names.exchange, during)
        shovel.wait_for_event("sqs_send_failed", count=3)
        # Retried and failed again since: had it acked anything unsent, it would have by now.
        shovel.wait_for_event("sqs_send_failed", count=6)
        counts = rabbitmq.queue_counts(amqp_names.queue)
        # Nothing SQS did not accept was acked: all 300 are still on the broker, some held
        # unacked by the shovel (bounded by its prefetch), the rest waiting in the queue.
        assert counts.total == len(during)
        assert counts.unacknowledged <= 200
        assert len(collector.ce_ids()) == len(before)
        assert shovel.metric("jobhooks_shovel_sqs_up") == 0

        proxy.accept()
        seen = collector.wait_for({ce_id_of(message) for message in before + during})
    assert seen.keys() == {ce_id_of(message) for message in before + during}
    assert shovel.metric("jobhooks_shovel_send_failures_total") >= 3
    assert shovel.metric("jobhooks_shovel_sqs_up") == 1
    assert queue_depth(rabbitmq.url, amqp_names.queue) == 0
    assert shovel.terminate() == 0


def test_broker_restart_mid_stream_loses_nothing(
    rabbitmq: RabbitMQBroker,
    moto_server: MotoServer,
    amqp_names: AmqpNames,
    ingest_queue: str,
    collector: SqsCollector,
    start_shovel: ShovelFactory,
) -> None:
    """Deliveries the shovel holds unacked when the broker goes away, and those still queued,
    all reach SQS once it is back; none is acked unsent.

    `held` is more than the prefetch (200), so at the restart the shovel holds 200 unacked and
    the queue keeps the rest. `before` and `after` only show the stream flowing on either side.
    The broker application is restarted inside its Erlang VM (`restart_app`): the shovel sees
    what a node restart shows it (its connection forced closed, refused connections, the
    quorum queue recovered from disk) for less than half the CPU; the e2e RabbitMQ restart test
    restarts the whole node.
    """
    before = [fetcher_job_event(index) for index in range(50)]
    held = [fetcher_job_event(index) for index in range(50, 350)]
    after = [fetcher_job_event(index) for index in range(350, 400)]
    with TcpProxy(moto_server.host, moto_server.port) as proxy:
        shovel = start_shovel(
            *shovel_args(rabbitmq, ingest_queue, amqp_names), "--sqs-endpoint-url", proxy.url
        )
        shovel.wait_until_consuming()
        publish_confirmed(rabbitmq.url, amqp_names.exchange, before)
        collector.wait_for({ce_id_of(message) for message in before})

        # Hold deliveries unacked in the shovel while the broker goes down under it.
        proxy.refuse()
        publish_confirmed(rabbitmq.url, amqp_names.exchange, held)
        shovel.wait_for_event("sqs_send_failed")
        rabbitmq.restart_app()
        proxy.accept()
        shovel.wait_until_consuming(vhosts=2, timeout=60)
        publish_confirmed(rabbitmq.url, amqp_names.exchange, after)

        everything = {ce_id_of(message) for message in before + held + after}
        seen = collector.wait_for(everything, timeout=90)
    assert seen.keys() == everything
    assert shovel.events("amqp_connection_lost")
    assert shovel.metric("jobhooks_shovel_reconnects_total") >= 1
    # The new connection started at a prefetch of 1 and grew back to the full prefetch.
    assert shovel.events("amqp_prefetch_restored")
    assert queue_depth(rabbitmq.url, amqp_names.queue) == 0
    assert shovel.terminate() == 0


def test_oversized_message_is_parked_with_its_reason_and_the_rest_flows(
    rabbitmq: RabbitMQBroker,
    amqp_names: AmqpNames,
    ingest_queue: str,
    collector: SqsCollector,
    start_shovel: ShovelFactory,
) -> None:
    # base64 makes 800,000 bytes about 1.07 MB of JSON: over SQS's 1 MiB.
    oversized = fetcher_job_event(1, body=bytes(range(256)) * 3125)
    small = [fetcher_job_event(index) for index in (0, 2, 3)]
    shovel = start_shovel(*shovel_args(rabbitmq, ingest_queue, amqp_names))
    shovel.wait_until_consuming()

    publish_confirmed(rabbitmq.url, amqp_names.exchange, [small[0], oversized, small[1]])
    shovel.wait_for_event("message_parked")
    publish_confirmed(rabbitmq.url, amqp_names.exchange, [small[2]])
    collector.wait_for({ce_id_of(message) for message in small})

    parked = read_queue(rabbitmq.url, amqp_names.parking_queue)
    assert len(parked) == 1
    headers = parked[0].headers
    assert parked[0].body == oversized.body
    assert headers[REASON_HEADER] == "too_large"
    assert str(SQS_MAX_MESSAGE_BYTES) in headers[DETAIL_HEADER]
    assert headers[ORIGINAL_EXCHANGE_HEADER] == amqp_names.exchange
    assert headers[ORIGINAL_ROUTING_KEY_HEADER] == oversized.routing_key
    assert headers["ce-id"] == oversized.headers["ce-id"]
    assert parked[0].properties.delivery_mode == 2
    assert ce_id_of(oversized) not in collector.ce_ids()
    assert shovel.metrics()['jobhooks_shovel_parked_total{reason="too_large",vhost="/"}'] == 1
    assert queue_depth(rabbitmq.url, amqp_names.queue) == 0
    assert shovel.terminate() == 0


def test_sigterm_drains_in_flight_messages_and_exits_zero(
    rabbitmq: RabbitMQBroker,
    amqp_names: AmqpNames,
    ingest_queue: str,
    collector: SqsCollector,
    start_shovel: ShovelFactory,
) -> None:
    # More than the shovel can forward before the signal, wherever the suite runs.
    messages = [fetcher_job_event(index) for index in range(1500)]
    shovel = start_shovel(
        *shovel_args(rabbitmq, ingest_queue, amqp_names), "--shutdown-timeout", "10"
    )
    shovel.wait_until_consuming()
    publish_confirmed(rabbitmq.url, amqp_names.exchange, messages)
    collector.wait_for_count(100)

    started = time.monotonic()
    assert shovel.terminate(timeout=20) == 0
    assert time.monotonic() - started < 12
    stopped = shovel.wait_for_event("shovel_stopped")
    assert stopped["drained"] is True

    # Whatever SQS accepted was acked (gone from the broker), the rest is back in the queue:
    # nothing acked unsent, nothing sent left unacked (which would be forwarded twice).
    remaining = queue_depth(rabbitmq.url, amqp_names.queue)
    deadline = time.monotonic() + 10
    while len(collector.ce_ids()) + remaining < len(messages) and time.monotonic() < deadline:
        time.sleep(0.1)
    forwarded = collector.ce_ids()
    assert 0 < len(forwarded) < len(messages)
    assert len(forwarded) + remaining == len(messages)
    assert set(forwarded.values()) == {1}


def test_one_shovel_consumes_every_tenant_vhost(
    rabbitmq: RabbitMQBroker,
    amqp_names: AmqpNames,
    ingest_queue: str,
    collector: SqsCollector,
    start_shovel: ShovelFactory,
) -> None:
    vhost = f"tenant-{amqp_names.queue.rsplit('.', 1)[-1]}"
    tenant_url = rabbitmq.add_vhost(vhost)
    shovel = start_shovel(
        *shovel_args(rabbitmq, ingest_queue, amqp_names), "--vhost", "/", "--vhost", vhost
    )
    shovel.wait_until_consuming(vhosts=2)
    default_events = [fetcher_job_event(index, tenant="single-tenant") for index in range(20)]
    tenant_events = [fetcher_job_event(index, tenant=vhost) for index in range(20, 40)]

    publish_confirmed(rabbitmq.url, amqp_names.exchange, default_events)
    publish_confirmed(tenant_url, amqp_names.exchange, tenant_events)
    collector.wait_for({ce_id_of(message) for message in default_events + tenant_events})

    vhost_of = {received.ce_id: received.forwarded.vhost for received in collector.received}
    assert {vhost_of[ce_id_of(message)] for message in default_events} == {"/"}
    assert {vhost_of[ce_id_of(message)] for message in tenant_events} == {vhost}
    assert {event["vhost"] for event in shovel.events("amqp_consuming")} == {"/", vhost}
    assert shovel.terminate() == 0


def test_a_queue_of_another_type_stops_the_shovel_with_a_clear_reason(
    rabbitmq: RabbitMQBroker,
    amqp_names: AmqpNames,
    ingest_queue: str,
    start_shovel: ShovelFactory,
) -> None:
    classic = start_shovel(
        *shovel_args(rabbitmq, ingest_queue, amqp_names), "--queue-type", "classic"
    )
    classic.wait_until_consuming()
    assert classic.terminate() == 0

    quorum = start_shovel(*shovel_args(rabbitmq, ingest_queue, amqp_names))
    assert quorum.process is not None
    assert quorum.process.wait(timeout=30) == 1
    assert "--queue-type" in quorum.log_tail()
    assert "already exists with other settings" in quorum.log_tail()


def test_two_shovels_share_one_queue_and_forward_each_message_once(
    rabbitmq: RabbitMQBroker,
    amqp_names: AmqpNames,
    ingest_queue: str,
    collector: SqsCollector,
    start_shovel: ShovelFactory,
) -> None:
    messages = [fetcher_job_event(index) for index in range(300)]
    # One sender each: moto's server answers one call at a time anyway.
    args = shovel_args(rabbitmq, ingest_queue, amqp_names, "--prefetch", "20", "--senders", "1")
    first, second = start_shovel(*args), start_shovel(*args)
    first.wait_until_consuming()
    second.wait_until_consuming()

    publish_confirmed(rabbitmq.url, amqp_names.exchange, messages)
    seen = collector.wait_for({ce_id_of(message) for message in messages})

    assert set(seen.values()) == {1}
    shares = [shovel.metric("jobhooks_shovel_forwarded_total") for shovel in (first, second)]
    assert sum(shares) == len(messages)
    assert min(shares) > 0, "both instances take part"
    assert first.terminate() == 0
    assert second.terminate() == 0
