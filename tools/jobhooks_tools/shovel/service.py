"""The shovel: consumers (one per vhost) feeding SQS senders, started and stopped as one.

In-process use (what `jobhooks dev` and the tests do):

    shovel = Shovel(settings).start()
    shovel.wait_until_consuming(timeout=30)
    ...
    report = shovel.stop()          # drains in-flight messages within the shutdown timeout

`serve(settings)` is the long-running form behind `jobhooks shovel`: health endpoint, signal
handling (SIGTERM/SIGINT drain and return; a second one stops waiting for SQS).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from dataclasses import dataclass
from types import FrameType
from typing import Any

from jobhooks.inbound.envelope import SQS_MAX_MESSAGE_BYTES

from jobhooks_tools.shovel.amqp_fields import install_amqp_field_codec
from jobhooks_tools.shovel.consumer import ConsumerState, VhostConsumer
from jobhooks_tools.shovel.exceptions import ShovelError
from jobhooks_tools.shovel.health import HealthServer
from jobhooks_tools.shovel.logs import get_logger, log_event
from jobhooks_tools.shovel.metrics import ShovelMetrics
from jobhooks_tools.shovel.outbox import Outbox
from jobhooks_tools.shovel.settings import SQS_MAX_BATCH_ENTRIES, ShovelSettings
from jobhooks_tools.shovel.sqs_sender import SqsSender, SqsStatus, create_sqs_client

log = get_logger()

# Part of the shutdown timeout kept for closing the connections after the drain.
_CLOSE_RESERVE_SECONDS = 1.0


@dataclass(frozen=True)
class ShutdownReport:
    drained: bool  # every delivery received was acked or parked (or released on a lost link)
    returned_to_broker: int  # deliveries left unacked: the broker redelivers them
    seconds: float


class Shovel:
    def __init__(
        self,
        settings: ShovelSettings,
        *,
        sqs_client: Any | None = None,
        metrics: ShovelMetrics | None = None,
    ) -> None:
        install_amqp_field_codec()
        self.settings = settings
        self.metrics = metrics or ShovelMetrics()
        # SendMessageBatch: at most 10 entries and 1 MiB for the whole request.
        self.outbox = Outbox(SQS_MAX_BATCH_ENTRIES, SQS_MAX_MESSAGE_BYTES)
        self.sqs_status = SqsStatus()
        self.failure: str | None = None
        self._failed = threading.Event()
        self._abandon = threading.Event()
        client = sqs_client if sqs_client is not None else create_sqs_client(settings)
        self.consumers = [
            VhostConsumer(vhost, settings, self.outbox, self.metrics, self._on_failure)
            for vhost in settings.vhosts
        ]
        self.senders = [
            SqsSender(
                index, self.outbox, client, settings, self.metrics, self.sqs_status, self._abandon
            )
            for index in range(settings.senders)
        ]
        self.metrics.gauge("jobhooks_shovel_in_flight", lambda: {(): float(self.outbox.in_flight)})
        self.metrics.gauge(
            "jobhooks_shovel_amqp_connected",
            lambda: {
                (("vhost", consumer.vhost),): float(consumer.state == ConsumerState.CONSUMING)
                for consumer in self.consumers
            },
        )
        self.metrics.gauge("jobhooks_shovel_sqs_up", lambda: {(): float(self.sqs_status.up)})

    def start(self) -> Shovel:
        log_event(
            log,
            logging.INFO,
            "shovel_starting",
            amqp_url=self.settings.redacted_amqp_url(),
            vhosts=list(self.settings.vhosts),
            queue=self.settings.queue,
            queue_type=self.settings.queue_type.value,
            parking_queue=self.settings.parking_queue,
            queue_url=self.settings.queue_url,
            senders=self.settings.senders,
        )
        for sender in self.senders:
            sender.start()
        for consumer in self.consumers:
            consumer.start()
        return self

    def wait_until_consuming(self, timeout: float) -> bool:
        """True once every vhost has declared its topology and registered its consumer."""
        deadline = time.monotonic() + timeout
        for consumer in self.consumers:
            while not consumer.consuming.wait(0.1):
                if self._failed.is_set() or time.monotonic() > deadline:
                    return False
        return True

    def abandon_in_flight(self) -> None:
        """Stops retrying SQS: what is unsent stays unacked and returns to the queue."""
        self._abandon.set()
        self.outbox.abandon()

    def stop(self, timeout: float | None = None) -> ShutdownReport:
        """Stops consuming, flushes what is in flight to SQS, acks it and closes. Returns within
        about `timeout` (default: the shutdown timeout setting) whatever SQS does."""
        started = time.monotonic()
        budget = self.settings.shutdown_timeout_seconds if timeout is None else timeout
        deadline = started + budget
        log_event(log, logging.INFO, "shovel_stopping", in_flight=self.outbox.in_flight)
        for consumer in self.consumers:
            consumer.stop_consuming()
        for consumer in self.consumers:
            consumer.wait_idle(max(0.0, deadline - _CLOSE_RESERVE_SECONDS - time.monotonic()))
        drained = self.outbox.wait_until_settled(
            max(0.0, deadline - _CLOSE_RESERVE_SECONDS - time.monotonic())
        )
        returned = self.outbox.in_flight
        if not drained:
            self.abandon_in_flight()
        self.outbox.close()
        for consumer in self.consumers:
            consumer.close()
        for thread in (*self.consumers, *self.senders):
            if thread.is_alive():
                thread.join(max(0.1, deadline - time.monotonic()))
        report = ShutdownReport(drained, returned, round(time.monotonic() - started, 3))
        log_event(
            log,
            logging.INFO if drained else logging.WARNING,
            "shovel_stopped",
            drained=report.drained,
            returned_to_broker=report.returned_to_broker,
            seconds=report.seconds,
        )
        return report

    def health(self) -> tuple[bool, dict[str, Any]]:
        vhosts = {consumer.vhost: consumer.state.value for consumer in self.consumers}
        healthy = (
            self.failure is None
            and self.sqs_status.up
            and all(state == ConsumerState.CONSUMING for state in vhosts.values())
        )
        report: dict[str, Any] = {
            "status": "ok" if healthy else "unavailable",
            "vhosts": vhosts,
            "sqs": {"up": self.sqs_status.up, "last_error": self.sqs_status.last_error},
            "in_flight": self.outbox.in_flight,
        }
        if self.failure:
            report["failure"] = self.failure
        return healthy, report

    def _on_failure(self, reason: str) -> None:
        if self.failure is None:
            self.failure = reason
        self._failed.set()


def serve(settings: ShovelSettings, *, sqs_client: Any | None = None) -> ShutdownReport:
    """Runs the shovel until SIGTERM/SIGINT, then drains. Raises ShovelError when it cannot run
    (a configuration the broker refuses); returns the shutdown report otherwise."""
    shovel = Shovel(settings, sqs_client=sqs_client)
    stop_requested = threading.Event()

    def on_signal(number: int, _frame: FrameType | None) -> None:
        if stop_requested.is_set():
            log_event(
                log, logging.WARNING, "shovel_stop_forced", signal=signal.Signals(number).name
            )
            shovel.abandon_in_flight()
            return
        log_event(log, logging.INFO, "shovel_signal", signal=signal.Signals(number).name)
        stop_requested.set()

    previous = {number: signal.signal(number, on_signal) for number in _STOP_SIGNALS}
    health: HealthServer | None = None
    try:
        if settings.health_port is not None:
            try:
                health = HealthServer(
                    shovel.health, shovel.metrics.render, settings.health_host, settings.health_port
                ).start()
            except OSError as error:
                raise ShovelError(
                    f"the health endpoint cannot listen on {settings.health_host}:"
                    f"{settings.health_port} ({error.strerror or error}); pick another "
                    "--health-port, 0 for any free port, or off"
                ) from None
            log_event(log, logging.INFO, "health_listening", host=health.host, port=health.port)
        shovel.start()
        while not stop_requested.is_set() and shovel.failure is None:
            stop_requested.wait(0.2)
        report = shovel.stop()
        if shovel.failure is not None:
            raise ShovelError(shovel.failure)
        return report
    finally:
        if health is not None:
            health.stop()
        for number, handler in previous.items():
            signal.signal(number, handler)


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
