"""SendMessageBatch, with the rule the shovel exists for: ack a delivery only once SQS accepted
that very entry.

SendMessageBatch answers 200 even when some entries failed; each entry is settled from its own
result. Refused entries go back to the outbox with a growing delay, never acknowledged unsent.
A failed call (SQS unreachable, throttling, credentials) puts its entries back and backs its
sender off. Since nothing is acked during an outage, the bounded prefetch soon stops the broker
from handing over more: the backlog waits on the broker, not in the shovel's memory.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from jobhooks_tools.shovel.backoff import Backoff
from jobhooks_tools.shovel.logs import get_logger, log_event
from jobhooks_tools.shovel.metrics import ShovelMetrics
from jobhooks_tools.shovel.outbox import DeliveryOwner, Outbox, PendingDelivery
from jobhooks_tools.shovel.parking import ParkReason
from jobhooks_tools.shovel.settings import ShovelSettings

log = get_logger("sqs")

# SQS refusing an entry "as the sender's fault" this many times means the message itself is
# unacceptable (the queue's own size limit below 1 MiB, for instance): it is parked, not retried
# forever. Outages and throttling are never the message's fault and are retried indefinitely.
MAX_SENDER_FAULTS = 5

# Request-level errors caused by the content of the batch rather than by SQS or by our access.
_CONTENT_ERRORS = {
    "BatchRequestTooLong",
    "InvalidParameterValue",
    "InvalidMessageContents",
    "InvalidAttributeName",
    "InvalidAttributeValue",
    "MessageTooLong",
}


def create_sqs_client(settings: ShovelSettings) -> Any:
    config = Config(
        region_name=settings.region,
        # The shovel retries itself, entry by entry; botocore's retries would hide outages and
        # resend entries SQS had already accepted.
        retries={"total_max_attempts": 1, "mode": "standard"},
        connect_timeout=5,
        read_timeout=20,
        max_pool_connections=settings.senders + 2,
        tcp_keepalive=True,
    )
    return boto3.session.Session().client(
        "sqs", endpoint_url=settings.sqs_endpoint_url, config=config
    )


class SqsStatus:
    """Whether the last SQS call succeeded, for /healthz and the `sqs_up` gauge."""

    def __init__(self) -> None:
        self.up = True
        self.last_error: str | None = None
        self.down_since: float | None = None

    def succeeded(self) -> None:
        if not self.up:
            log_event(log, logging.INFO, "sqs_available_again", down_seconds=self._down_for())
        self.up, self.last_error, self.down_since = True, None, None

    def failed(self, error: str) -> None:
        if self.up:
            self.down_since = time.monotonic()
        self.up, self.last_error = False, error

    def _down_for(self) -> float:
        return round(time.monotonic() - self.down_since, 3) if self.down_since else 0.0


class SqsSender(threading.Thread):
    def __init__(
        self,
        index: int,
        outbox: Outbox,
        client: Any,
        settings: ShovelSettings,
        metrics: ShovelMetrics,
        status: SqsStatus,
        abandon: threading.Event,
    ) -> None:
        super().__init__(name=f"sqs-sender-{index}", daemon=True)
        self.outbox = outbox
        self.client = client
        self.settings = settings
        self.metrics = metrics
        self.status = status
        self._abandon = abandon
        # Backs off this sender after a failed call, so an outage costs a few calls per
        # second whatever the backlog.
        self._backoff = Backoff(initial=0.1, maximum=settings.retry_max_delay_seconds)

    def run(self) -> None:
        while True:
            batch = self.outbox.take_batch(self.settings.batch_linger_seconds)
            if batch is None:
                return
            if self._abandon.is_set():
                # Shutdown ran out of time: leave them unacked; the broker redelivers them.
                self.outbox.settle(batch)
                continue
            batch = self._still_ackable(batch)
            if not batch:
                continue
            try:
                sent = self.send(batch)
            except Exception:
                # A bug must not end a sender with deliveries nobody will settle: log it, put
                # them back unacked (at worst they are sent twice), carry on.
                log.exception("sqs_sender_crashed", extra={"fields": {"entries": len(batch)}})
                self.outbox.retry_now(item for item in batch if not item.settled)
                sent = False
            if sent:
                self._backoff.reset()
            else:
                self._abandon.wait(self._backoff.next_delay())

    def send(self, deliveries: list[PendingDelivery]) -> bool:
        """One SendMessageBatch. Acks what SQS accepted, puts back what it refused; returns
        whether the call itself got through."""
        entries = [item.entry.as_batch_entry(str(index)) for index, item in enumerate(deliveries)]
        try:
            response = self.client.send_message_batch(
                QueueUrl=self.settings.queue_url, Entries=entries
            )
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", "")).rsplit(".", 1)[-1]
            message = str(error.response.get("Error", {}).get("Message", ""))
            self._call_failed(f"{code}: {message}", len(deliveries))
            if code in _CONTENT_ERRORS:
                self._refused_for_content(deliveries, f"{code}: {message}")
                return True
            self.outbox.retry_now(self._attempted(deliveries))
            return False
        except (BotoCoreError, OSError) as error:
            self._call_failed(f"{error.__class__.__name__}: {error}", len(deliveries))
            self.outbox.retry_now(self._attempted(deliveries))
            return False

        self.metrics.batch_sent()
        self.status.succeeded()
        by_id = dict(enumerate(deliveries))
        answered: set[int] = set()
        accepted = []
        for success in response.get("Successful", []):
            answered.add(int(success["Id"]))
            accepted.append(by_id[int(success["Id"])])
        for failure in response.get("Failed", []):
            answered.add(int(failure["Id"]))
            self._entry_refused(by_id[int(failure["Id"])], failure)
        for index, item in by_id.items():
            if index not in answered:
                # Neither accepted nor refused: not accepted, so not acked.
                self._retry_later(item)
        for owner, items in _by_owner(accepted).items():
            self.metrics.forwarded(owner.vhost, len(items))
            owner.acknowledge(items)
        return True

    def _entry_refused(self, item: PendingDelivery, failure: dict[str, Any]) -> None:
        reason = f"{failure.get('Code', '')}: {failure.get('Message', '')}"
        self.metrics.send_failed("entry")
        log_event(
            log,
            logging.WARNING,
            "sqs_entry_refused",
            reason=reason[:500],
            sender_fault=bool(failure.get("SenderFault")),
            ce_id=item.delivery.ce_id,
            vhost=item.owner.vhost,
            attempts=item.attempts + 1,
        )
        if failure.get("SenderFault"):
            self._refused_as_invalid(item, reason)
        else:
            self._retry_later(item)

    def _refused_for_content(self, deliveries: list[PendingDelivery], reason: str) -> None:
        if len(deliveries) > 1:
            # Find the entry SQS objects to: each goes again in a batch of its own.
            for item in deliveries:
                item.send_alone = True
            self.outbox.retry_now(self._attempted(deliveries))
            return
        self._refused_as_invalid(deliveries[0], reason)

    def _refused_as_invalid(self, item: PendingDelivery, reason: str) -> None:
        item.sender_faults += 1
        if item.sender_faults >= MAX_SENDER_FAULTS:
            detail = f"SQS refused it {item.sender_faults} times: {reason}"[:1000]
            item.owner.park([item], ParkReason.SQS_REJECTED, detail)
        else:
            self._retry_later(item)

    def _retry_later(self, item: PendingDelivery) -> None:
        item.attempts += 1
        ceiling = min(self.settings.retry_max_delay_seconds, 0.1 * 2 ** min(item.attempts, 16))
        self.outbox.retry_later(item, ceiling / 2 + random.uniform(0, ceiling / 2))

    def _attempted(self, deliveries: list[PendingDelivery]) -> list[PendingDelivery]:
        for item in deliveries:
            item.attempts += 1
        return deliveries

    def _call_failed(self, reason: str, entries: int) -> None:
        self.metrics.send_failed("request")
        self.status.failed(reason)
        log_event(
            log,
            logging.WARNING,
            "sqs_send_failed",
            error=reason[:500],
            entries=entries,
            in_flight=self.outbox.in_flight,
        )

    def _still_ackable(self, deliveries: list[PendingDelivery]) -> list[PendingDelivery]:
        # After a reconnect the broker redelivers these on the new connection; sending the old
        # copies would only add duplicates, and their acks could not be delivered anyway.
        current = [item for item in deliveries if item.is_current]
        if len(current) < len(deliveries):
            self.outbox.settle(item for item in deliveries if not item.is_current)
        return current


def _by_owner(deliveries: Sequence[PendingDelivery]) -> dict[DeliveryOwner, list[PendingDelivery]]:
    groups: dict[DeliveryOwner, list[PendingDelivery]] = defaultdict(list)
    for item in deliveries:
        groups[item.owner].append(item)
    return groups
