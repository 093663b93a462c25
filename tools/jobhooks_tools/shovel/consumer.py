"""One AMQP connection per vhost: declare, consume with manual acks, ack what SQS accepted.

pika connections are not thread-safe. Each `VhostConsumer` owns its connection on its own
thread; the SQS senders never touch it and ask for acks and parking through
`add_callback_threadsafe`, which runs the request on this thread.

A delivery tag is only valid on the channel that received it. Each connection gets a new
*generation*; a request about a delivery from an older generation is dropped, because the
broker has already put that delivery back in the queue (at-least-once: a duplicate, never a
loss).

One message must never stop the others. Whatever goes wrong while handling a delivery parks
that delivery; the connection stays. What could fail before the shovel sees a delivery (pika
reading the frame) is prevented by the total field-table codec (amqp_fields) and ended by the
delivery limits (topology, redeliveries). After a connection failed, the next one starts with a
prefetch of 1 that grows with each settled delivery: a message that breaks connections is then
the only one in flight when it does, and only it comes back (and reaches the limit).

The broker fixes a consumer's prefetch when the consumer is registered: a later `basic.qos`
applies only to consumers registered after it (RabbitMQ's per-consumer prefetch). So the prefetch
grows by registering more consumers on the same channel, each with the difference, once the
allowed prefetch has doubled (about eight consumers from 1 to 200). Cancelling the first one
instead would make pika requeue its deliveries not yet handed to us, and a requeue counts
toward the delivery limit.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import socket
import threading
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any

import pika
import pika.exceptions
from pika.adapters.blocking_connection import BlockingChannel, BlockingConnection

from jobhooks_tools.shovel.backoff import Backoff
from jobhooks_tools.shovel.exceptions import (
    ShovelAuthenticationError,
    ShovelError,
    ShovelTopologyError,
)
from jobhooks_tools.shovel.forwarding import Delivery, build_sqs_entry
from jobhooks_tools.shovel.logs import get_logger, log_event
from jobhooks_tools.shovel.metrics import ShovelMetrics
from jobhooks_tools.shovel.outbox import Outbox, PendingDelivery
from jobhooks_tools.shovel.parking import ParkReason, publish_to_parking
from jobhooks_tools.shovel.redeliveries import RedeliveryCounter
from jobhooks_tools.shovel.settings import QueueType, ShovelSettings
from jobhooks_tools.shovel.topology import declare_topology

log = get_logger("amqp")

# How long the connection thread waits for broker I/O before looking at its stop flags.
_POLL_SECONDS = 0.2
_SOCKET_TIMEOUT_SECONDS = 10.0
# A broker that blocks publishers (memory or disk alarm) for this long gets a fresh connection.
_BLOCKED_CONNECTION_TIMEOUT_SECONDS = 120.0
_CONNECTION_ERRORS = (pika.exceptions.AMQPError, OSError, ShovelError)
# A failure of the broker or the link, as opposed to one of a message's own.
_BROKER_ERRORS = (
    pika.exceptions.AMQPConnectionError,
    pika.exceptions.AMQPChannelError,
    OSError,
)
_ACCESS_REFUSED = 403
_NOT_ALLOWED = 530


class ConsumerState(StrEnum):
    CONNECTING = "connecting"
    CONSUMING = "consuming"
    DRAINING = "draining"  # connected, no longer consuming, acking what is in flight
    DISCONNECTED = "disconnected"
    STOPPED = "stopped"
    FAILED = "failed"


class _ConsumerCancelledError(ShovelError):
    """The broker cancelled our consumer (queue deleted, leader moved): start over."""


class VhostConsumer(threading.Thread):
    def __init__(
        self,
        vhost: str,
        settings: ShovelSettings,
        outbox: Outbox,
        metrics: ShovelMetrics,
        on_failure: Callable[[str], None],
    ) -> None:
        super().__init__(name=f"amqp-consumer[{vhost}]", daemon=True)
        self.vhost = vhost
        self.settings = settings
        self.outbox = outbox
        self.metrics = metrics
        self.state = ConsumerState.CONNECTING
        self.failure: str | None = None
        self._on_failure = on_failure
        self._stop_consuming = threading.Event()
        self._closing = threading.Event()
        self._idle = threading.Event()  # set while no consumer is registered on the broker
        self._idle.set()
        self.consuming = threading.Event()  # set once the first consumer is registered
        # Owned by this thread, except that other threads read _connection and _generation.
        self._connection: BlockingConnection | None = None
        self._channel: BlockingChannel | None = None
        self._parking_channel: BlockingChannel | None = None
        # The consumers registered on the current channel, and the sum of their prefetches.
        self._consumer_tags: list[str] = []
        self._registered_prefetch = 0
        self._broker_cancelled = False
        self._generation = 0
        self._open_generation = -1
        self._outstanding: dict[int, PendingDelivery] = {}
        # Deliveries handed back to the broker when the last connection ended (None: it never
        # opened), for the log.
        self._released_on_loss: int | None = None
        self._redeliveries = RedeliveryCounter(settings.delivery_limit)
        # The prefetch of the current connection: the setting, or 1 growing back to it after a
        # connection failed (see the module docstring).
        self._prefetch = settings.prefetch
        self._warned_without_delivery_limit = False

    # --- called from other threads --------------------------------------------------------

    def holds(self, generation: int) -> bool:
        return generation == self._open_generation

    def acknowledge(self, deliveries: Sequence[PendingDelivery]) -> None:
        batch = list(deliveries)
        self._on_connection_thread(functools.partial(self._ack, batch), batch)

    def park(self, deliveries: Sequence[PendingDelivery], reason: str, detail: str) -> None:
        batch = list(deliveries)
        self._on_connection_thread(
            functools.partial(self._park_pending, batch, reason, detail), batch
        )

    def stop_consuming(self) -> None:
        """Cancels the consumer (no new deliveries); in-flight ones are still acked."""
        self._stop_consuming.set()

    def wait_idle(self, timeout: float) -> bool:
        return self._idle.wait(timeout)

    def close(self) -> None:
        """Closes the connection (unacked deliveries go back to the queue) and ends the thread."""
        self._stop_consuming.set()
        self._closing.set()

    # --- the connection thread ------------------------------------------------------------

    def run(self) -> None:
        backoff = Backoff(initial=0.2, maximum=self.settings.retry_max_delay_seconds)
        while not self._closing.is_set():
            try:
                self._run_connection(backoff)
            except (ShovelTopologyError, ShovelAuthenticationError) as error:
                self._fail(str(error))
                return
            except _CONNECTION_ERRORS as error:
                self.state = ConsumerState.DISCONNECTED
                self._prefetch = 1
                if self._released_on_loss is None:
                    log_event(
                        log,
                        logging.WARNING,
                        "amqp_connect_failed",
                        vhost=self.vhost,
                        error=_describe(error),
                    )
                else:
                    log_event(
                        log,
                        logging.WARNING,
                        "amqp_connection_lost",
                        vhost=self.vhost,
                        error=_describe(error),
                        returned_to_broker=self._released_on_loss,
                    )
            except Exception:
                # A bug must not silently end the only consumer of this vhost: log it loudly
                # and start over on a new connection (the broker redelivers what was held).
                self.state = ConsumerState.DISCONNECTED
                self._prefetch = 1
                log.exception("amqp_consumer_crashed", extra={"fields": {"vhost": self.vhost}})
            if self._closing.is_set() or self._stop_consuming.is_set():
                # Shutting down: a new connection could not ack the old deliveries anyway.
                break
            delay = backoff.next_delay()
            self.metrics.reconnected(self.vhost)
            log_event(
                log,
                logging.INFO,
                "amqp_reconnect_scheduled",
                vhost=self.vhost,
                delay=round(delay, 3),
            )
            self._closing.wait(delay)
        self.state = ConsumerState.STOPPED

    def _run_connection(self, backoff: Backoff) -> None:
        self.state = ConsumerState.CONNECTING
        self._released_on_loss = None
        connection = self._connect()
        self._connection = connection
        try:
            if not declare_topology(connection, self.settings, self.vhost):
                self._warn_without_delivery_limit()
            channel = connection.channel()
            parking_channel = connection.channel()
            parking_channel.confirm_delivery()
            channel.add_on_cancel_callback(self._on_broker_cancel)
            self._generation += 1
            self._channel, self._parking_channel = channel, parking_channel
            self._broker_cancelled = False
            self._open_generation = self._generation
            if not self._stop_consuming.is_set():
                self._register_consumer(channel, self._prefetch)
                self._idle.clear()
                self.state = ConsumerState.CONSUMING
                self.consuming.set()
                backoff.reset()
                log_event(
                    log,
                    logging.INFO,
                    "amqp_consuming",
                    vhost=self.vhost,
                    queue=self.settings.queue,
                    exchange=self.settings.exchange,
                    routing_keys=list(self.settings.routing_keys),
                    prefetch=self._prefetch,
                )
            while True:
                connection.process_data_events(time_limit=_POLL_SECONDS)
                if self._broker_cancelled:
                    raise _ConsumerCancelledError("the broker cancelled the consumer")
                if self._stop_consuming.is_set() and self._consumer_tags:
                    for tag in self._consumer_tags:
                        channel.basic_cancel(tag)
                    self._consumer_tags = []
                    self.state = ConsumerState.DRAINING
                    log_event(log, logging.INFO, "amqp_consumer_cancelled", vhost=self.vhost)
                if not self._consumer_tags:
                    self._idle.set()
                if self._closing.is_set():
                    # Run the acks that were requested last, then close.
                    connection.process_data_events(time_limit=0)
                    connection.close()
                    return
        finally:
            self._release_connection(connection)

    def _connect(self) -> BlockingConnection:
        parameters = pika.URLParameters(self.settings.amqp_url_for(self.vhost))
        parameters.heartbeat = self.settings.heartbeat_seconds
        parameters.connection_attempts = 1
        parameters.socket_timeout = _SOCKET_TIMEOUT_SECONDS
        parameters.blocked_connection_timeout = _BLOCKED_CONNECTION_TIMEOUT_SECONDS
        parameters.client_properties = {
            "connection_name": f"jobhooks-shovel {socket.gethostname()} pid {os.getpid()}"
        }
        try:
            return pika.BlockingConnection(parameters)
        except (
            pika.exceptions.ProbableAuthenticationError,
            pika.exceptions.AuthenticationError,
        ) as error:
            raise ShovelAuthenticationError(
                f"the broker rejected the credentials of the AMQP URL "
                f"({self.settings.redacted_amqp_url()}): {error.__class__.__name__}; "
                "check the user and password"
            ) from None
        except pika.exceptions.ProbableAccessDeniedError:
            raise ShovelTopologyError(
                f"the AMQP user may not open vhost {self.vhost!r} (or it does not exist); "
                "create the vhost or grant the user access to it"
            ) from None
        except pika.exceptions.ConnectionClosedByBroker as error:
            if error.reply_code in (_ACCESS_REFUSED, _NOT_ALLOWED):
                raise ShovelTopologyError(
                    f"the broker refused vhost {self.vhost!r}: {error.reply_text}; create the "
                    "vhost or grant the AMQP user access to it"
                ) from None
            raise

    def _release_connection(self, connection: BlockingConnection) -> None:
        """After the connection closed or broke: its deliveries will be redelivered."""
        self._open_generation = -1
        self._consumer_tags = []
        self._registered_prefetch = 0
        self._channel = self._parking_channel = None
        self._connection = None
        self._idle.set()
        released = list(self._outstanding.values())
        self._outstanding.clear()
        self._released_on_loss = len([d for d in released if not d.settled])
        self.outbox.settle(released)
        if connection.is_open:
            with contextlib.suppress(*_CONNECTION_ERRORS):
                connection.close()

    def _warn_without_delivery_limit(self) -> None:
        if self.settings.queue_type is not QueueType.QUORUM or self._warned_without_delivery_limit:
            return
        self._warned_without_delivery_limit = True
        log_event(
            log,
            logging.WARNING,
            "queue_without_delivery_limit",
            vhost=self.vhost,
            queue=self.settings.queue,
            detail=(
                "the queue was declared without x-delivery-limit (by an older shovel) and "
                "RabbitMQ cannot add it: the shovel counts redeliveries itself, but a message "
                "that breaks the connection before the shovel sees it may come back forever; "
                "set a policy with delivery-limit on the queue, or delete the queue once it is "
                "empty so that the shovel declares it again (docs/shovel.md, Upgrading)"
            ),
        )

    def _fail(self, reason: str) -> None:
        self.failure = reason
        self.state = ConsumerState.FAILED
        self._idle.set()
        log_event(log, logging.ERROR, "amqp_configuration_error", vhost=self.vhost, error=reason)
        self._on_failure(reason)

    def _on_broker_cancel(self, _frame: Any) -> None:
        self._broker_cancelled = True

    def _on_message(
        self,
        channel: BlockingChannel,
        method: pika.spec.Basic.Deliver,
        properties: pika.BasicProperties,
        body: bytes,
    ) -> None:
        self.metrics.received(self.vhost)
        delivery = Delivery(
            vhost=self.vhost,
            exchange=method.exchange,
            routing_key=method.routing_key,
            redelivered=bool(method.redelivered),
            body=body,
            properties=properties,
            headers=dict(properties.headers or {}),
        )
        tag = method.delivery_tag
        if delivery.redelivered:
            came_back = self._redeliveries.came_back(delivery)
            if self._redeliveries.exceeded(came_back):
                self._dead_letter(
                    tag,
                    delivery,
                    ParkReason.DELIVERY_LIMIT,
                    f"redelivered {came_back} times without being settled (--delivery-limit "
                    f"{self._redeliveries.limit})",
                )
                return
        try:
            entry = build_sqs_entry(delivery)
        except Exception as error:
            # Whatever makes this one message unforwardable must not cost the connection, and
            # with it every message behind this one.
            self._park(tag, delivery, ParkReason.UNENCODABLE, _describe(error))
            return
        if entry.size > self.settings.max_message_bytes:
            self._park(
                tag,
                delivery,
                ParkReason.TOO_LARGE,
                f"the forwarded message is {entry.size} bytes; SQS takes at most "
                f"{self.settings.max_message_bytes}",
            )
            return
        pending = PendingDelivery(
            owner=self,
            generation=self._open_generation,
            delivery_tag=tag,
            delivery=delivery,
            entry=entry,
        )
        self._outstanding[tag] = pending
        self.outbox.put(pending)

    def _park(self, tag: int, delivery: Delivery, reason: str, detail: str) -> None:
        assert self._channel is not None and self._parking_channel is not None
        try:
            # Confirmed by the broker before the original is acked: never both gone.
            publish_to_parking(
                self._parking_channel, self.settings.parking_queue, delivery, reason, detail
            )
        except _BROKER_ERRORS:
            # The parking queue or the link failed, not this message: it stays unacked and
            # comes back on the next connection.
            raise
        except Exception as error:
            # This message cannot be re-published as the shovel read it; the broker moves its
            # own copy instead.
            self._dead_letter(
                tag, delivery, reason, f"{detail}; re-publishing it failed ({_describe(error)})"
            )
            return
        self._channel.basic_ack(tag)
        self._settled([delivery])
        self._report_parked(delivery, reason, detail)

    def _dead_letter(self, tag: int, delivery: Delivery, reason: str, detail: str) -> None:
        """Rejects the delivery without requeue: the broker dead-letters it to the parking
        queue (the queue's x-dead-letter arguments), with x-death headers instead of ours."""
        assert self._channel is not None
        self._channel.basic_reject(tag, requeue=False)
        self._settled([delivery])
        self._report_parked(delivery, reason, detail, dead_lettered=True)

    def _report_parked(
        self, delivery: Delivery, reason: str, detail: str, *, dead_lettered: bool = False
    ) -> None:
        self.metrics.parked(self.vhost, reason)
        log_event(
            log,
            logging.WARNING,
            "message_parked",
            vhost=self.vhost,
            reason=reason,
            detail=detail,
            ce_id=delivery.ce_id,
            routing_key=delivery.routing_key,
            parking_queue=self.settings.parking_queue,
            dead_lettered=dead_lettered,
        )

    def _settled(self, deliveries: Sequence[Delivery]) -> None:
        """Deliveries acked or parked: they will not come back, and the prefetch may grow."""
        for delivery in deliveries:
            self._redeliveries.forget(delivery)
        if self._prefetch < self.settings.prefetch and self._channel is not None:
            self._prefetch = min(self.settings.prefetch, self._prefetch + len(deliveries))
            if (
                self._consumer_tags
                and not self._stop_consuming.is_set()
                and (
                    self._prefetch == self.settings.prefetch
                    or self._prefetch >= 2 * self._registered_prefetch
                )
            ):
                self._register_consumer(self._channel, self._prefetch - self._registered_prefetch)
                if self._prefetch == self.settings.prefetch:
                    log_event(
                        log,
                        logging.INFO,
                        "amqp_prefetch_restored",
                        vhost=self.vhost,
                        prefetch=self._prefetch,
                        consumers=len(self._consumer_tags),
                    )

    def _register_consumer(self, channel: BlockingChannel, prefetch: int) -> None:
        """One more consumer on `channel`, allowed `prefetch` unacked deliveries of its own."""
        channel.basic_qos(prefetch_count=prefetch)
        self._consumer_tags.append(
            channel.basic_consume(self.settings.queue, self._on_message, auto_ack=False)
        )
        self._registered_prefetch += prefetch

    def _ack(self, deliveries: list[PendingDelivery]) -> None:
        try:
            channel = self._channel
            # A tag acked twice would close the channel (PRECONDITION_FAILED): only ack tags
            # this connection still holds.
            tags = {
                item.delivery_tag
                for item in deliveries
                if self.holds(item.generation) and item.delivery_tag in self._outstanding
            }
            if channel is None or not tags:
                return
            # Tags grow in delivery order and _outstanding keeps that order. When the oldest
            # outstanding deliveries are all being acked, one `multiple` ack covers them: a
            # tenth of the frames (and of the queue's log writes) for a full batch.
            prefix_end = None
            for tag in self._outstanding:
                if tag not in tags:
                    break
                prefix_end = tag
            if prefix_end is not None:
                channel.basic_ack(prefix_end, multiple=True)
            for tag in sorted(tags):
                if prefix_end is None or tag > prefix_end:
                    channel.basic_ack(tag)
                self._outstanding.pop(tag, None)
            self._settled([item.delivery for item in deliveries if item.delivery_tag in tags])
        finally:
            self.outbox.settle(deliveries)

    def _park_pending(self, deliveries: list[PendingDelivery], reason: str, detail: str) -> None:
        try:
            for pending in deliveries:
                tag = pending.delivery_tag
                if self.holds(pending.generation) and tag in self._outstanding:
                    self._park(tag, pending.delivery, reason, detail)
                    self._outstanding.pop(tag, None)
        finally:
            self.outbox.settle(deliveries)

    def _on_connection_thread(
        self, callback: Callable[[], None], deliveries: list[PendingDelivery]
    ) -> None:
        connection = self._connection
        if connection is None:
            self.outbox.settle(deliveries)
            return
        try:
            connection.add_callback_threadsafe(callback)
        except pika.exceptions.AMQPError:
            # The connection closed: the broker will redeliver these.
            self.outbox.settle(deliveries)


def _describe(error: BaseException) -> str:
    text = str(error) or repr(error)
    return f"{error.__class__.__name__}: {text}"[:500]
