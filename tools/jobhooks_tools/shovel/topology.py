"""The broker-side objects the shovel owns, declared idempotently on every connection.

The producer publishes with `mandatory` but ignores returns, and in single-tenant mode it does
not declare the exchange: until a queue is bound, its events are silently dropped. So the shovel
declares the exchange, its queue and the bindings before it consumes, on every (re)connection
(a broker that lost its definitions gets them back).

A quorum queue gets a delivery limit (`x-delivery-limit`): a message the broker has delivered
that often without an ack is dead-lettered to the parking queue, so even a failure nobody
foresaw cannot hold the queue forever. A queue declared before the shovel set one keeps working
without it (RabbitMQ refuses to change a queue's arguments); the consumer warns about it.
"""

from __future__ import annotations

from typing import Any

import pika.exceptions
from pika.adapters.blocking_connection import BlockingChannel, BlockingConnection

from jobhooks_tools.shovel.exceptions import ShovelTopologyError
from jobhooks_tools.shovel.settings import QueueType, ShovelSettings

_PRECONDITION_FAILED = 406
_ACCESS_REFUSED = 403
_NOT_FOUND = 404
DELIVERY_LIMIT_ARGUMENT = "x-delivery-limit"


def queue_arguments(settings: ShovelSettings, *, delivery_limit: bool = True) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "x-queue-type": settings.queue_type.value,
        # Whatever the broker would drop from the shovel's queue (its delivery limit, an
        # operator's TTL or length policy) lands in the parking queue instead.
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": settings.parking_queue,
    }
    # Classic queues have no delivery limit; the consumer counts redeliveries itself.
    if delivery_limit and settings.queue_type is QueueType.QUORUM:
        arguments[DELIVERY_LIMIT_ARGUMENT] = settings.delivery_limit
    return arguments


def parking_queue_arguments(settings: ShovelSettings) -> dict[str, Any]:
    return {"x-queue-type": settings.queue_type.value}


def declare_topology(connection: BlockingConnection, settings: ShovelSettings, vhost: str) -> bool:
    """Declares exchange, parking queue, queue and bindings on a channel of their own. Returns
    whether the queue has the broker-side delivery limit (False for a classic queue, or a
    quorum queue declared without one). Raises ShovelTopologyError on a conflict that retrying
    cannot fix."""
    channel = connection.channel()
    step = f"exchange {settings.exchange!r} (topic, durable)"
    try:
        channel.exchange_declare(settings.exchange, exchange_type="topic", durable=True)
        step = f"parking queue {settings.parking_queue!r} ({settings.queue_type.value}, durable)"
        channel.queue_declare(
            settings.parking_queue, durable=True, arguments=parking_queue_arguments(settings)
        )
        step = _queue_step(settings)
        channel, limited = _declare_queue(connection, channel, settings, vhost)
        for routing_key in settings.routing_keys:
            step = f"binding {settings.queue!r} to {settings.exchange!r} with {routing_key!r}"
            channel.queue_bind(settings.queue, settings.exchange, routing_key=routing_key)
    except pika.exceptions.ChannelClosedByBroker as error:
        raise ShovelTopologyError(_explain(error, step, vhost)) from None
    channel.close()
    return limited


def _declare_queue(
    connection: BlockingConnection, channel: BlockingChannel, settings: ShovelSettings, vhost: str
) -> tuple[BlockingChannel, bool]:
    arguments = queue_arguments(settings)
    try:
        channel.queue_declare(settings.queue, durable=True, arguments=arguments)
        return channel, DELIVERY_LIMIT_ARGUMENT in arguments
    except pika.exceptions.ChannelClosedByBroker as error:
        if not (
            error.reply_code == _PRECONDITION_FAILED
            and DELIVERY_LIMIT_ARGUMENT in arguments
            and DELIVERY_LIMIT_ARGUMENT in error.reply_text
        ):
            raise
    # The queue exists without a delivery limit (declared by a shovel that set none yet) or
    # with another one. Declaring it without the argument tells them apart: the first is used
    # as it is, the second is a conflict (and so is any other difference).
    channel = connection.channel()
    channel.queue_declare(
        settings.queue, durable=True, arguments=queue_arguments(settings, delivery_limit=False)
    )
    return channel, False


def _queue_step(settings: ShovelSettings) -> str:
    limit = (
        f", delivery limit {settings.delivery_limit}"
        if settings.queue_type is QueueType.QUORUM
        else ""
    )
    return f"queue {settings.queue!r} ({settings.queue_type.value}, durable{limit})"


def _explain(error: pika.exceptions.ChannelClosedByBroker, step: str, vhost: str) -> str:
    where = f"declaring the {step} in vhost {vhost!r}"
    if error.reply_code == _PRECONDITION_FAILED and DELIVERY_LIMIT_ARGUMENT in error.reply_text:
        return (
            f"{where} failed: it already exists with another delivery limit "
            f"({error.reply_text}); start the shovel with --delivery-limit set to the queue's, "
            "or delete the queue once it is empty so that the shovel declares it again"
        )
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
