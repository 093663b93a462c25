"""The broker-side objects the shovel owns, declared idempotently on every connection.

The producer publishes with `mandatory` but ignores returns, and in single-tenant mode it does
not declare the exchange: until a queue is bound, its events are silently dropped. So the shovel
declares the exchange, its queue and the bindings before it consumes, on every (re)connection
(a broker that lost its definitions gets them back).
"""

from __future__ import annotations

from typing import Any

import pika.exceptions
from pika.adapters.blocking_connection import BlockingChannel

from jobhooks.shovel.exceptions import ShovelTopologyError
from jobhooks.shovel.settings import ShovelSettings

_PRECONDITION_FAILED = 406
_ACCESS_REFUSED = 403
_NOT_FOUND = 404


def queue_arguments(settings: ShovelSettings) -> dict[str, Any]:
    return {
        "x-queue-type": settings.queue_type.value,
        # Whatever the broker would drop from the shovel's queue (a quorum queue's delivery
        # limit, an operator's TTL or length policy) lands in the parking queue instead.
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": settings.parking_queue,
    }


def parking_queue_arguments(settings: ShovelSettings) -> dict[str, Any]:
    return {"x-queue-type": settings.queue_type.value}


def declare_topology(channel: BlockingChannel, settings: ShovelSettings, vhost: str) -> None:
    """Declares exchange, parking queue, queue and bindings; raises ShovelTopologyError on a
    conflict that retrying cannot fix."""
    step = f"exchange {settings.exchange!r} (topic, durable)"
    try:
        channel.exchange_declare(settings.exchange, exchange_type="topic", durable=True)
        step = f"parking queue {settings.parking_queue!r} ({settings.queue_type.value}, durable)"
        channel.queue_declare(
            settings.parking_queue, durable=True, arguments=parking_queue_arguments(settings)
        )
        step = f"queue {settings.queue!r} ({settings.queue_type.value}, durable)"
        channel.queue_declare(settings.queue, durable=True, arguments=queue_arguments(settings))
        for routing_key in settings.routing_keys:
            step = f"binding {settings.queue!r} to {settings.exchange!r} with {routing_key!r}"
            channel.queue_bind(settings.queue, settings.exchange, routing_key=routing_key)
    except pika.exceptions.ChannelClosedByBroker as error:
        raise ShovelTopologyError(_explain(error, step, vhost)) from None


def _explain(error: pika.exceptions.ChannelClosedByBroker, step: str, vhost: str) -> str:
    where = f"declaring the {step} in vhost {vhost!r}"
    if error.reply_code == _PRECONDITION_FAILED:
        return (
            f"{where} failed: it already exists with other settings ({error.reply_text}); "
            "delete it, or match its type with --queue-type, or pick another name"
        )
    if error.reply_code == _ACCESS_REFUSED:
        return (
            f"{where} was refused ({error.reply_text}); grant the AMQP user configure, write "
            "and read permissions on these names in that vhost"
        )
    return f"{where} failed: {error.reply_code} {error.reply_text}"
