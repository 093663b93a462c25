"""`jobhooks publish-sample`: the producer's wire format, nothing declared, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pika
import pytest
from jobhooks.inbound.envelope import ForwardedMessage
from jobhooks.inbound.job_events import VerificationPolicy, read_job_event
from jobhooks.inbound.rejection import RejectedMessageError
from jobhooks_tools.local.ports import free_port
from jobhooks_tools.local.rabbitmq import RabbitMQBroker
from jobhooks_tools.sample_events import demo_key

pytestmark = [pytest.mark.rabbitmq]

EXCHANGE = "fetcher.job.events"


def publish_sample(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jobhooks_tools.cli.main", "publish-sample", *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def vhost_url(rabbitmq: RabbitMQBroker) -> str:
    """A vhost of this test's own on the e2e broker: the bridge's shovel never reads it."""
    return rabbitmq.add_vhost(f"publish-{uuid.uuid4().hex[:8]}")


@pytest.fixture
def bound_queue(vhost_url: str) -> Iterator[pika.adapters.blocking_connection.BlockingChannel]:
    """What the shovel declares: the topic exchange and a queue bound to both routing keys."""
    connection = pika.BlockingConnection(pika.URLParameters(vhost_url))
    channel = connection.channel()
    channel.exchange_declare(EXCHANGE, exchange_type="topic", durable=True)
    channel.queue_declare("captured", durable=True)
    for routing_key in ("job.completed", "job.failed"):
        channel.queue_bind("captured", EXCHANGE, routing_key=routing_key)
    try:
        yield channel
    finally:
        connection.close()


def drain(channel: pika.adapters.blocking_connection.BlockingChannel) -> list[ForwardedMessage]:
    messages = []
    while True:
        method, properties, body = channel.basic_get("captured", auto_ack=True)
        if method is None:
            return messages
        assert properties.delivery_mode == 2
        assert properties.content_type == "application/json"
        messages.append(
            ForwardedMessage(
                exchange=method.exchange,
                routing_key=method.routing_key,
                body=body,
                headers=dict(properties.headers),
            )
        )


def test_publishes_signed_events_copies_and_tampering_with_the_producers_header_types(
    vhost_url: str, bound_queue: pika.adapters.blocking_connection.BlockingChannel
) -> None:
    result = publish_sample(
        "--amqp-url", vhost_url, "--count", "4", "--tenant", "acme", "--tenant", "globex",
        "--copies", "all", "--tamper", "all", "--output", "json",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == 4 * 4 + 5
    messages = drain(bound_queue)
    assert len(messages) == len(lines)
    policy = VerificationPolicy(keys=[demo_key()])
    for line, message in zip(lines, messages, strict=True):
        headers = message.headers
        assert isinstance(headers["ce-id"], bytes)
        assert isinstance(headers["ce-time"], bytes)
        assert isinstance(headers["X-Tenant-ID"], str)
        assert isinstance(headers["t"], str)
        assert type(headers["x-retry-count"]) is int
        assert json.loads(message.body)["jobId"]  # camelCase body
        try:
            event = read_job_event(message, policy, datetime.now(UTC))
        except RejectedMessageError as rejection:
            assert rejection.reason.value == line["expected_rejection"], line
        else:
            assert line["expected_rejection"] is None, line
            assert event.event_id == line["event_id"]
            assert event.tenant_id == line["tenant_id"]


def test_publishes_each_tenant_into_its_own_vhost(rabbitmq: RabbitMQBroker) -> None:
    tenants = [f"tenant-{uuid.uuid4().hex[:6]}" for _ in range(2)]
    for tenant in tenants:
        url = rabbitmq.add_vhost(tenant)
        with pika.BlockingConnection(pika.URLParameters(url)) as connection:
            channel = connection.channel()
            channel.exchange_declare(EXCHANGE, exchange_type="topic", durable=True)
            channel.queue_declare("captured", durable=True)
            channel.queue_bind("captured", EXCHANGE, routing_key="job.*")

    result = publish_sample(
        "--amqp-url", rabbitmq.url, "--count", "4", "--tenant", tenants[0],
        "--tenant", tenants[1], "--vhost-per-tenant", "--quiet",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    for tenant in tenants:
        assert rabbitmq.queue_counts("captured", vhost=tenant).ready == 2


def test_a_missing_exchange_is_a_one_line_error_and_nothing_is_declared(vhost_url: str) -> None:
    result = publish_sample("--amqp-url", vhost_url, "--count", "1")

    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert "exchange 'fetcher.job.events' does not exist" in result.stderr
    with (
        pika.BlockingConnection(pika.URLParameters(vhost_url)) as connection,
        pytest.raises(pika.exceptions.ChannelClosedByBroker),
    ):
        connection.channel().exchange_declare(EXCHANGE, passive=True)


def test_an_event_no_queue_is_bound_for_is_an_error_not_a_silent_drop(vhost_url: str) -> None:
    with pika.BlockingConnection(pika.URLParameters(vhost_url)) as connection:
        connection.channel().exchange_declare(EXCHANGE, exchange_type="topic", durable=True)

    result = publish_sample("--amqp-url", vhost_url, "--count", "1")

    assert result.returncode == 1
    assert "no queue is bound" in result.stderr


def test_no_broker_is_a_one_line_error() -> None:
    result = publish_sample("--amqp-url", f"amqp://guest:guest@127.0.0.1:{free_port()}/")

    assert result.returncode == 1
    assert result.stderr.startswith("jobhooks: publish-sample: no RabbitMQ broker answers")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "arguments",
    [("--count", "-1"), ("--rate", "fast"), ("--copies", "carbon"), ("--key-hex", "abc")],
)
def test_bad_usage_exits_2(arguments: tuple[str, ...]) -> None:
    result = publish_sample(*arguments)

    assert result.returncode == 2
    assert result.stdout == ""
