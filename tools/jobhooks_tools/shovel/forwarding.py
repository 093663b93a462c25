"""One AMQP delivery as one SQS message entry (docs/forwarded-message.md).

The body is the `ForwardedMessage` JSON, the source of truth. A few SQS message attributes are
added for filtering and debugging only; the contract allows at most 3.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from jobhooks.inbound.envelope import ForwardedMessage, header_text, properties_from_amqp

# SQS counts the body plus each attribute's name, data type and value against its size limit.
_STRING = "String"
# SQS takes only these characters in string attribute values (the XML 1.0 character set).
_SQS_TEXT = re.compile("^[\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]+$")
_MAX_ATTRIBUTE_VALUE_CHARS = 1024


@dataclass(frozen=True, slots=True)
class Delivery:
    """What the broker handed over, kept as received (to forward it, or to park it)."""

    vhost: str
    exchange: str
    routing_key: str
    redelivered: bool
    body: bytes
    properties: Any  # pika.BasicProperties
    headers: dict[str, Any] = field(default_factory=dict)

    @property
    def ce_id(self) -> str | None:
        return header_text(self.headers.get("ce-id"))


@dataclass(frozen=True, slots=True)
class SqsEntry:
    body: str
    attributes: dict[str, dict[str, str]]
    size: int

    def as_batch_entry(self, entry_id: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"Id": entry_id, "MessageBody": self.body}
        if self.attributes:
            entry["MessageAttributes"] = self.attributes
        return entry


def forwarded_message(delivery: Delivery) -> ForwardedMessage:
    return ForwardedMessage(
        exchange=delivery.exchange,
        routing_key=delivery.routing_key,
        body=delivery.body,
        headers=delivery.headers,
        vhost=delivery.vhost,
        redelivered=delivery.redelivered,
        properties=properties_from_amqp(delivery.properties),
    )


def build_sqs_entry(delivery: Delivery) -> SqsEntry:
    """The SQS entry for a delivery; raises TypeError/ValueError when it cannot be encoded."""
    body = forwarded_message(delivery).to_json()
    attributes = sqs_message_attributes(delivery)
    return SqsEntry(body=body, attributes=attributes, size=sqs_size(body, attributes))


def sqs_message_attributes(delivery: Delivery) -> dict[str, dict[str, str]]:
    candidates = {
        "ce-id": delivery.ce_id,
        "amqp-routing-key": delivery.routing_key,
        "amqp-vhost": delivery.vhost,
    }
    return {
        name: {"DataType": _STRING, "StringValue": value}
        for name, value in candidates.items()
        # An attribute SQS would refuse would fail the whole entry; it is only a convenience.
        if value and len(value) <= _MAX_ATTRIBUTE_VALUE_CHARS and _SQS_TEXT.match(value)
    }


def sqs_size(body: str, attributes: dict[str, dict[str, str]]) -> int:
    size = len(body.encode("utf-8"))
    for name, attribute in attributes.items():
        size += len(name.encode("utf-8")) + len(attribute["DataType"].encode("utf-8"))
        size += len(attribute["StringValue"].encode("utf-8"))
    return size
