"""One message never stops the consumer: what it does with a delivery it cannot handle.

A recording channel stands in for the broker (the integration suite runs the same rules against
RabbitMQ, tests/integration/test_shovel_poison.py); the consumer, its redelivery count and its
parking path are the real ones.
"""

from __future__ import annotations

from typing import Any

import pika
import pika.exceptions
import pika.spec
import pytest
from jobhooks.inbound.envelope import NonUtf8String
from jobhooks_tools.shovel.consumer import VhostConsumer
from jobhooks_tools.shovel.forwarding import Delivery
from jobhooks_tools.shovel.metrics import ShovelMetrics
from jobhooks_tools.shovel.outbox import Outbox
from jobhooks_tools.shovel.parking import REASON_HEADER
from jobhooks_tools.shovel.redeliveries import RedeliveryCounter
from jobhooks_tools.shovel.settings import load_settings

SETTINGS = load_settings(
    {
        "amqp_url": "amqp://guest:guest@127.0.0.1:5672/%2F",
        "queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/ingest",
        "delivery_limit": "2",
        "prefetch": "50",
    },
    {},
)


class RecordingChannel:
    def __init__(self, publish_error: Exception | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.publish_error = publish_error

    def basic_ack(self, delivery_tag: int, multiple: bool = False) -> None:
        self.calls.append(("ack", delivery_tag))

    def basic_reject(self, delivery_tag: int, requeue: bool = True) -> None:
        self.calls.append(("reject", delivery_tag, requeue))

    def basic_qos(self, prefetch_count: int) -> None:
        self.calls.append(("qos", prefetch_count))

    def basic_consume(self, queue: str, on_message_callback: Any, auto_ack: bool) -> str:
        assert not auto_ack
        self.calls.append(("consume", queue))
        return f"ctag-{len(self.calls)}"

    def basic_publish(self, exchange: str, routing_key: str, body: bytes, **kwargs: Any) -> None:
        if self.publish_error is not None:
            raise self.publish_error
        self.calls.append(("publish", routing_key, kwargs["properties"].headers[REASON_HEADER]))


def consumer(parking: RecordingChannel | None = None) -> tuple[VhostConsumer, RecordingChannel]:
    outbox = Outbox(10, 1_048_576)
    subject = VhostConsumer("/", SETTINGS, outbox, ShovelMetrics(), lambda _reason: None)
    channel = RecordingChannel()
    subject._channel = channel  # type: ignore[assignment]
    subject._parking_channel = parking or channel  # type: ignore[assignment]
    subject._open_generation = 1
    subject._consumer_tags = ["ctag-0"]
    subject._registered_prefetch = SETTINGS.prefetch
    return subject, channel


def deliver(
    subject: VhostConsumer, tag: int, headers: dict[str, Any], *, redelivered: bool = False
) -> None:
    method = pika.spec.Basic.Deliver(
        delivery_tag=tag,
        redelivered=redelivered,
        exchange="fetcher.job.events",
        routing_key="job.completed",
    )
    properties = pika.BasicProperties(content_type="application/json", headers=headers)
    subject._on_message(subject._channel, method, properties, b'{"jobId":"j1"}')  # type: ignore[arg-type]


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("not even a description")


def test_any_failure_to_encode_a_delivery_parks_it_and_keeps_the_connection() -> None:
    subject, channel = consumer()

    deliver(subject, 1, {"ce-id": b"fetcher.job.completed.j1", "odd": Unprintable()})

    assert channel.calls == [("publish", SETTINGS.parking_queue, "unencodable"), ("ack", 1)]
    assert subject.metrics.value("jobhooks_shovel_parked_total", reason="unencodable") == 1


def test_a_message_that_cannot_be_re_published_is_dead_lettered_by_the_broker() -> None:
    # pika refuses to encode it: a failure of this message, not of the broker.
    refusing = RecordingChannel(pika.exceptions.UnsupportedAMQPFieldException([], object()))
    subject, channel = consumer(parking=refusing)

    deliver(subject, 1, {"odd": Unprintable()})

    assert channel.calls == [("reject", 1, False)]
    assert subject.metrics.value("jobhooks_shovel_parked_total", reason="unencodable") == 1


def test_a_parking_queue_that_refuses_leaves_the_delivery_unacked() -> None:
    subject, channel = consumer(parking=RecordingChannel(pika.exceptions.NackError([])))

    with pytest.raises(pika.exceptions.NackError):
        deliver(subject, 1, {"odd": Unprintable()})

    assert channel.calls == []  # neither acked nor rejected: the broker redelivers it


def test_a_message_redelivered_past_the_limit_is_rejected_to_the_parking_queue() -> None:
    subject, channel = consumer()
    headers = {"ce-id": b"fetcher.job.completed.j1", "x-note": NonUtf8String(b"\xff")}

    deliver(subject, 1, headers)
    for tag in (2, 3):  # the limit: 2 redeliveries are handled
        deliver(subject, tag, headers, redelivered=True)
    assert ("reject", 3, False) not in channel.calls
    deliver(subject, 4, headers, redelivered=True)

    assert channel.calls == [("reject", 4, False)]
    assert subject.metrics.value("jobhooks_shovel_parked_total", reason="delivery_limit") == 1
    assert list(subject._outstanding) == [1, 2, 3]


def test_after_a_failed_connection_the_prefetch_starts_at_one_and_grows_back() -> None:
    # The broker fixes a consumer's prefetch when it is registered (a later basic.qos does not
    # reach it), so growing means registering more consumers, each with the difference.
    subject, channel = consumer()
    subject._prefetch = 1
    subject._registered_prefetch = 1

    for tag in range(1, 60):
        deliver(subject, tag, {"odd": Unprintable()})  # parked: one settled each time

    growth = [call for call in channel.calls if call[0] in ("qos", "consume")]
    # Each step a qos for the next consumer, then that consumer; the allowed prefetch doubles.
    assert growth == [
        step
        for prefetch in (1, 2, 4, 8, 16, 18)
        for step in (("qos", prefetch), ("consume", SETTINGS.queue))
    ]
    assert subject._prefetch == subject._registered_prefetch == SETTINGS.prefetch
    assert len(subject._consumer_tags) == 7


def delivery(
    body: bytes, *, redelivered: bool = True, routing_key: Any = "job.completed"
) -> Delivery:
    return Delivery("/", "fetcher.job.events", routing_key, redelivered, body, None, {})


def test_redeliveries_are_counted_per_message_and_forgotten_once_settled() -> None:
    counter = RedeliveryCounter(limit=2)
    first, other = delivery(b"one"), delivery(b"two")

    assert [counter.came_back(first) for _ in range(3)] == [1, 2, 3]
    assert counter.came_back(other) == 1
    assert counter.exceeded(3) and not counter.exceeded(2)
    counter.forget(first)
    assert counter.came_back(first) == 1


def test_the_redelivery_count_is_bounded_in_memory() -> None:
    counter = RedeliveryCounter(limit=2, capacity=3)
    for index in range(10):
        counter.came_back(delivery(str(index).encode()))

    assert len(counter) == 3
    assert counter.came_back(delivery(b"9")) == 2  # the newest are kept
    assert counter.came_back(delivery(b"0")) == 1


def test_a_routing_key_that_is_not_utf8_is_counted_too() -> None:
    counter = RedeliveryCounter(limit=2)
    assert counter.came_back(delivery(b"x", routing_key=b"job.\xff.x")) == 1
