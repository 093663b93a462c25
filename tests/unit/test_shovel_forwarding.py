"""One AMQP delivery as one SQS entry, and pika's float headers made lossless."""

from __future__ import annotations

import struct
from typing import Any

import pika
import pika.data
from jobhooks.inbound.envelope import ForwardedMessage
from jobhooks_tools.local.aws_limits import check_request
from jobhooks_tools.shovel.amqp_fields import install_amqp_field_codec
from jobhooks_tools.shovel.forwarding import Delivery, build_sqs_entry, sqs_size


def delivery(headers: dict[str, Any], body: bytes = b'{"jobId":"j1"}') -> Delivery:
    return Delivery(
        vhost="tenant-a",
        exchange="fetcher.job.events",
        routing_key="job.completed",
        redelivered=True,
        body=body,
        properties=pika.BasicProperties(content_type="application/json", delivery_mode=2),
        headers=headers,
    )


def test_the_entry_body_is_the_forwarded_message_of_the_delivery() -> None:
    headers = {"ce-id": b"fetcher.job.completed.j1", "t": "1750000000", "x-retry-count": 0}

    entry = build_sqs_entry(delivery(headers))

    forwarded = ForwardedMessage.from_json(entry.body)
    assert forwarded.headers == headers
    assert forwarded.vhost == "tenant-a"
    assert forwarded.redelivered is True
    assert forwarded.properties == {"content_type": "application/json", "delivery_mode": 2}
    assert forwarded.body == b'{"jobId":"j1"}'


def test_at_most_three_attributes_and_ce_id_only_when_it_is_text() -> None:
    with_ce_id = build_sqs_entry(delivery({"ce-id": b"fetcher.job.completed.j1"}))
    binary_ce_id = build_sqs_entry(delivery({"ce-id": b"\xff\xfe"}))

    assert with_ce_id.attributes["ce-id"]["StringValue"] == "fetcher.job.completed.j1"
    assert set(with_ce_id.attributes) == {"ce-id", "amqp-routing-key", "amqp-vhost"}
    assert "ce-id" not in binary_ce_id.attributes


def test_the_size_counts_body_and_attributes_like_sqs() -> None:
    attributes = {"ce-id": {"DataType": "String", "StringValue": "é"}}

    assert sqs_size("{}", attributes) == 2 + len("ce-id") + len("String") + 2


def test_float_and_double_headers_decode_as_floats() -> None:
    install_amqp_field_codec()
    fields = b"\x01dd" + struct.pack(">d", 1.5) + b"\x01ff" + struct.pack(">f", 0.25)
    nested = b"\x01A" + b"A" + struct.pack(">I", 9) + b"d" + struct.pack(">d", -2.5)

    table, _ = pika.data.decode_table(struct.pack(">I", len(fields)) + fields, 0)
    array_table, _ = pika.data.decode_table(struct.pack(">I", len(nested)) + nested, 0)

    assert table == {"d": 1.5, "f": 0.25}
    assert all(type(value) is float for value in table.values())
    assert array_table == {"A": [-2.5]}


def test_float_headers_encode_as_doubles_for_the_parking_queue() -> None:
    install_amqp_field_codec()
    pieces: list[bytes] = []

    pika.data.encode_table(pieces, {"ratio": 0.1, "n": 1, "flag": True})

    table, _ = pika.data.decode_table(b"".join(pieces), 0)
    assert table == {"ratio": 0.1, "n": 1, "flag": True}
    assert type(table["ratio"]) is float and type(table["flag"]) is bool


def test_an_entry_passes_sqs_limits_whatever_text_the_producer_sent() -> None:
    # U+FFFE in ce-id and the body, a control character in a header: SQS would refuse any of
    # them raw; the body carries them escaped or base64'd, the attribute is left out.
    odd = "fetcher.job.completed.\ufffe\x01"
    entry = build_sqs_entry(delivery({"ce-id": odd.encode(), "x-note": odd}, body=odd.encode()))

    assert "ce-id" not in entry.attributes
    batch = [entry.as_batch_entry("0")]
    assert check_request("sqs", "SendMessageBatch", {"QueueUrl": "q", "Entries": batch}) == []
