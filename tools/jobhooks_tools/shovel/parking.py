"""The parking queue: where a delivery goes when it cannot be forwarded to SQS.

A parked message keeps the original body, properties and headers, and gains headers giving the
reason and the original exchange and routing key (the signature covers both, so a replay must
publish it back to that exchange with that key). It is published with publisher confirms and
only then is the original acknowledged: a parked message is never lost between the two.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum

import pika
from jobhooks.inbound.envelope import PROPERTY_NAMES
from pika.adapters.blocking_connection import BlockingChannel

from jobhooks_tools.shovel.forwarding import Delivery

REASON_HEADER = "x-jobhooks-park-reason"
DETAIL_HEADER = "x-jobhooks-park-detail"
ORIGINAL_EXCHANGE_HEADER = "x-jobhooks-original-exchange"
ORIGINAL_ROUTING_KEY_HEADER = "x-jobhooks-original-routing-key"
PARKED_AT_HEADER = "x-jobhooks-parked-at"

_PERSISTENT = 2


class ParkReason(StrEnum):
    TOO_LARGE = "too_large"  # the forwarded message exceeds SQS's size limit
    UNENCODABLE = "unencodable"  # the forwarded-message contract cannot carry it
    SQS_REJECTED = "sqs_rejected"  # SQS refused the entry as invalid, repeatedly
    # Redelivered more often than --delivery-limit allows (the shovel's own count; dead-lettered
    # by the broker, so the parked copy has x-death headers instead of ours).
    DELIVERY_LIMIT = "delivery_limit"


def parked_properties(delivery: Delivery, reason: str, detail: str) -> pika.BasicProperties:
    values = {name: getattr(delivery.properties, name, None) for name in PROPERTY_NAMES}
    # Persistent whatever the original said: the parking queue is the message's last copy.
    values["delivery_mode"] = _PERSISTENT
    headers = dict(delivery.headers)
    headers.update(
        {
            REASON_HEADER: reason,
            DETAIL_HEADER: detail,
            ORIGINAL_EXCHANGE_HEADER: delivery.exchange,
            ORIGINAL_ROUTING_KEY_HEADER: delivery.routing_key,
            PARKED_AT_HEADER: datetime.now(UTC).isoformat(timespec="milliseconds"),
        }
    )
    return pika.BasicProperties(headers=headers, **values)


def publish_to_parking(
    channel: BlockingChannel, parking_queue: str, delivery: Delivery, reason: str, detail: str
) -> None:
    """Publishes to the parking queue on a channel in confirm mode; returns once the broker
    confirmed it, raises (pika's UnroutableError, NackError, ...) otherwise."""
    channel.basic_publish(
        exchange="",
        routing_key=parking_queue,
        body=delivery.body,
        properties=parked_properties(delivery, reason, detail),
        mandatory=True,
    )
